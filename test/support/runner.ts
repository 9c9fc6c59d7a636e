/** Test doubles at the runner boundary: the real runner with a spy in front of it. */
import { createRunner, type Runner } from '../../src/lib/system/index.js'

/**
 * Every run is shown to `spy` first, then it runs for real;
 * `env` is laid over process.env for every child, which is how tests put a fake binary on PATH.
 */
export function spyingRunner(
  spy: (file: string, args: readonly string[]) => void | Promise<void>,
  env?: NodeJS.ProcessEnv,
): Runner {
  const real = createRunner()
  return {
    async run(file, args, opts) {
      await spy(file, args)
      return real.run(file, args, env ? { ...opts, env: { ...process.env, ...env } } : opts)
    },
  }
}
