/** Long operations in lib hand their steps to the command, which decides how to show them. */

/** One step, shown as progress (listr2 on a terminal, a plain line otherwise). */
export interface Step {
  /** What the step does or waits for, named: "Waiting for the Kubernetes API at https://…". */
  title: string
  /**
   * `report` shows a line under the title while the step runs (each retry: which attempt of how
   * many failed, why, and how long until the next); nothing when progress is silent (--json).
   */
  run: (report: (line: string) => void) => Promise<void>
}

/** Runs the steps in order and stops at the first that throws (rethrowing it). */
export type Progress = (steps: Step[]) => Promise<void>

/** Shows nothing: for --json, where stdout carries only the result. */
export const runStepsSilently: Progress = async (steps) => {
  for (const step of steps) await step.run(() => {})
}
