/**
 * One machine's bootstrap data as it moves through a run: its assignment, format, output file and
 * rendered document travel together, so no step pairs machines with documents by index.
 */
import type { Assignment } from './orchestrate.js'
import type { StagedFile } from './staged-writes.js'
import type { BootstrapToken } from '../kube/index.js'
import type { BootstrapPlan, OutputFormat } from './types.js'

export interface MachineJob extends Assignment {
  format: OutputFormat
  /** Where its user data is written. */
  file: string
  /** The full document, before any offload. */
  document: string
}

/** What the run's mode (kubeadm or attested) contributes besides each machine's plan. */
export interface ModeSetup {
  planFor(assignment: Assignment): BootstrapPlan
  /** The mode's own local files (CA set, admin kubeconfig), written before the user data. */
  files: StagedFile[]
  /** Join data needs a bootstrap token that the run creates. */
  token?: BootstrapToken
  /** Kubeadm mode: where the CA set is and what this run added to it. */
  ca?: { dir: string; filesCreated: string[] }
  /** Kubeadm mode with a management cluster: the Cluster whose CA Secrets were used, and those created. */
  caSecrets?: { namespace: string; cluster: string; created: string[] }
  adminKubeconfig?: string
}
