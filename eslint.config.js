import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['.build-*/**', '.old-dist-*/**', 'dist/**', 'node_modules/**', 'coverage/**', 'src/gen/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  { files: ['test/**', 'bench/**', 'scripts/**', 'bin/**'], rules: { 'no-console': 'off' } },
  // chai's property assertions (`.to.be.true`) are expressions by design
  { files: ['test/**'], rules: { '@typescript-eslint/no-unused-expressions': 'off' } },
  {
    files: ['bin/**'],
    languageOptions: { globals: { process: 'readonly', URL: 'readonly', console: 'readonly' } },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { require: 'readonly', module: 'readonly', process: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
)
