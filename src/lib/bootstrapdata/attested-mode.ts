/** Attested mode's part of a run: the workspace's init-secret hash, then one attested plan per machine. */
import { CliError, exitCodeOf, hintOf, messageOf } from '../errors/index.js'
import { attestedPlan, type StateDiskOptions } from './attested.js'
import type { ModeSetup } from './machine-job.js'
import type { BootstrapObjects } from './types.js'

export async function attestedMode(
  opts: { workspace: string; attestationVariant: string; stateDisk: StateDiskOptions },
  deps: {
    /** The bcrypt hash of the workspace's init secret, for every node config. */
    initSecretHash: (workspace: string) => Promise<string>
  },
  objects: BootstrapObjects,
): Promise<ModeSetup> {
  const initSecretHash = await deps.initSecretHash(opts.workspace).catch((err: unknown) => {
    throw new CliError(
      `attested data needs the workspace's init secret (its hash goes into every node config): ${messageOf(err)}`,
      { exitCode: exitCodeOf(err), hint: hintOf(err), cause: err },
    )
  })
  return {
    planFor: (a) =>
      attestedPlan({
        ...a,
        members: objects.machines.filter((m) => m.spec.clusterName === a.cluster.metadata.name),
        attestationVariant: opts.attestationVariant,
        secrets: objects.secrets,
        initSecretHash,
        stateDisk: opts.stateDisk,
      }),
    files: [],
  }
}
