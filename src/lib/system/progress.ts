/** Long operations in lib hand their steps to the command, which decides how to show them. */

/** One step, shown as progress (listr2 on a terminal, a plain line otherwise). */
export interface Step {
  title: string
  run: () => Promise<void>
}

/** Runs the steps in order and stops at the first that throws (rethrowing it). */
export type Progress = (steps: Step[]) => Promise<void>

/** Shows nothing: for --json, where stdout carries only the result. */
export const runStepsSilently: Progress = async (steps) => {
  for (const step of steps) await step.run()
}
