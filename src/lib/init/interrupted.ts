/**
 * The line a Ctrl-C or SIGTERM prints during init: what the operator is left with, as far as the
 * CLI can know it. Before the attestation passed nothing was sent; after it, the request may have
 * reached the node and the node may be initialized, which `init` run again finds out and resumes.
 */
/** Where init is. `resuming`: a resume was sent to a node an earlier run of this workspace initialized. */
export type Phase = 'preparing' | 'sent' | 'resuming' | 'answered' | 'releases'

export interface InterruptFacts {
  /** The master secret is complete on disk. */
  secretOnDisk: boolean
  masterSecret: string
  /** The node's HOST:PORT. */
  address: string
  /** The workspace as the operator named it (-C). */
  workspace: string
}

export function interruptedLine(phase: Exclude<Phase, 'releases'>, f: InterruptFacts): string {
  const again = `constellation init -C ${f.workspace}`
  switch (phase) {
    case 'preparing':
      return f.secretOnDisk
        ? `init interrupted: nothing was sent to the node; the master secret in ${f.masterSecret} can be reused: run init again`
        : 'init interrupted: nothing was sent to the node and no master secret was written'
    case 'sent':
      return `init interrupted after the request reached ${f.address}: the node may be initialized, and its keys derive from the master secret in ${f.masterSecret} (keep it). Run \`${again}\` again: it resumes, fetching the kubeconfig from the node if the node was initialized, and initializes it if it was not`
    case 'resuming':
      return `init interrupted while fetching the answer of the node at ${f.address}, which took its lock for an earlier init of this workspace; the node keeps the answer: run \`${again}\` again to resume`
    case 'answered':
      return `init interrupted while saving: the node at ${f.address} is initialized; keep ${f.masterSecret} and check the kubeconfig and the state file in the workspace`
  }
}
