import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  {
    ignores: [
      '.build-*/**',
      '.old-dist-*/**',
      '.cache/**',
      'dist/**',
      'node_modules/**',
      'coverage/**',
      'src/gen/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // Type-aware rules: they need the program, so the project service reads tsconfig.check.json's files.
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { project: './tsconfig.check.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: true },
      ],
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
    },
  },
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  // The import rule (docs/architecture.md): another domain only through its index.ts. A file in a
  // domain's subfolder (bootstrapper/join/) leaves its domain one `../` later, so each depth has its
  // own pattern. The layer order is asserted by test/architecture/layers.test.ts.
  ...[1, 2, 3].map((depth) => ({
    files: [`src/lib/*/${'*/'.repeat(depth - 1)}*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: `^(\\.\\./){${depth}}[^./][^/]*/(?!index\\.js$)`,
              message: 'import another domain through its index.ts (docs/architecture.md)',
            },
          ],
        },
      ],
    },
  })),
  {
    files: ['src/*.ts', 'src/commands/**/*.ts', 'src/wiring/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '/lib/[^/]+/(?!index\\.js$)',
              message: 'import a domain through its index.ts (docs/architecture.md)',
            },
          ],
        },
      ],
    },
  },
  // the contract fakes in simulator/ are executables that print what the real tools print
  { files: ['test/**', 'bench/**', 'scripts/**', 'bin/**', 'simulator/**'], rules: { 'no-console': 'off' } },
  // chai's property assertions (`.to.be.true`) are expressions by design
  { files: ['test/**'], rules: { '@typescript-eslint/no-unused-expressions': 'off' } },
  {
    files: ['bin/**'],
    languageOptions: { globals: { process: 'readonly', URL: 'readonly', console: 'readonly' } },
  },
  {
    // CommonJS by bin/package.json: a CommonJS entry starts ~7 ms faster than an ES module
    files: ['**/*.cjs', 'bin/run.js', 'bin/code-cache.js'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: {
        require: 'readonly',
        module: 'readonly',
        process: 'readonly',
        __dirname: 'readonly',
        Buffer: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
)
