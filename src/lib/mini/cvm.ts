/**
 * Confidential-VM variants in a local cluster. No CVM hardware exists here, so one STAND-IN AMD or
 * Intel per cluster (cvm-standin, a test double at the hardware boundary) signs every node's
 * reports, served to each node at its configfs-tsm directory by its supervisor; the workspace
 * config pins the stand-in's root in place of the vendor's, as tpm-ek's pins the local CA. Every
 * check of the variant runs (signature, chain, TCB, policy, measurement, the binding to the AK);
 * what it cannot show is real hardware, and verify and status say so.
 */
import { createHash } from 'node:crypto'
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { cvmKind, tdx, type CvmVariant } from '../attestation/index.js'
import {
  createSnpStandIn,
  createTdxStandIn,
  loadSnpStandIn,
  loadTdxStandIn,
  produceSnpEvidence,
  produceTdxEvidence,
  saveSnpStandIn,
  saveTdxStandIn,
  type ProduceEvidence,
} from '../cvm-standin/index.js'
import { CliError } from '../errors/index.js'
import { writeSecretFile } from '../system/index.js'
import type { MachineCvm } from './machine.js'

/** The CVM variants whose reports a node reads through configfs-tsm, which mini stands in for. */
export const MINI_CVM_VARIANTS = ['aws-sev-snp', 'gcp-sev-snp', 'qemu-tdx'] as const
export type MiniCvmVariant = (typeof MINI_CVM_VARIANTS)[number]
export const isMiniCvmVariant = (v: string): v is MiniCvmVariant =>
  (MINI_CVM_VARIANTS as readonly string[]).includes(v)

/** Every stand-in SEV-SNP guest of mini launches with this measurement, which the config pins. */
export const STANDIN_LAUNCH_MEASUREMENT = createHash('sha384')
  .update('constellation mini: the launch measurement of a stand-in SEV-SNP guest')
  .digest()

/** The files of a cluster's stand-in: its keys (cvm-standin's format), its root, TDX collateral. */
export function cvmStandInFiles(dir: string) {
  return {
    dir,
    keys: path.join(dir, 'keys'),
    root: path.join(dir, 'root.pem'),
    collateral: path.join(dir, 'collateral'),
  }
}
type CvmStandInFiles = ReturnType<typeof cvmStandInFiles>

/** Refuses what mini cannot stand in for, before anything starts. */
export function checkMiniVariant(variant: CvmVariant): asserts variant is MiniCvmVariant {
  if (!isMiniCvmVariant(variant))
    throw new CliError(
      `mini cannot run ${variant}: Azure's CVMs read their report from the HCL in the vTPM and from IMDS, which mini does not stand in for`,
      { exitCode: 2, hint: `use ${MINI_CVM_VARIANTS.join(', ')} (configfs-tsm, which mini stands in for)` },
    )
}

/**
 * Creates the cluster's stand-in vendor and returns the variant's config section (measurements
 * left to the caller), its paths relative to `relativeTo` (the workspace) or absolute (the nodes).
 */
export async function createCvmStandIn(
  variant: MiniCvmVariant,
  files: CvmStandInFiles,
): Promise<(relativeTo?: string) => Record<string, unknown>> {
  await mkdir(files.dir, { recursive: true, mode: 0o700 })
  const where = (file: string, relativeTo?: string) => (relativeTo ? path.relative(relativeTo, file) : file)
  if (cvmKind(variant) === 'snp') {
    const snp = await createSnpStandIn({ signer: variant === 'aws-sev-snp' ? 'VLEK' : 'VCEK' })
    await saveSnpStandIn(snp, files.keys)
    await writeFile(files.root, snp.ark, { mode: 0o644 })
    return (relativeTo) => ({
      bootloaderVersion: snp.tcb.bootloader,
      teeVersion: snp.tcb.tee,
      snpVersion: snp.tcb.snp,
      microcodeVersion: snp.tcb.microcode,
      launchMeasurement: STANDIN_LAUNCH_MEASUREMENT.toString('hex'),
      amdRootKey: where(files.root, relativeTo),
      allowMigrationAgent: false,
      allowSMT: false,
    })
  }
  const intel = await createTdxStandIn()
  await saveTdxStandIn(intel, files.keys)
  await writeFile(files.root, intel.rootPem, { mode: 0o644 })
  await mkdir(files.collateral, { recursive: true, mode: 0o700 })
  const collateral = intel.collateral()
  for (const [key, name] of Object.entries(tdx.TDX_COLLATERAL_FILES))
    await writeSecretFile(
      path.join(files.collateral, name),
      collateral[key as keyof typeof collateral],
      'replace',
    )
  // what every stand-in TD reports, read from one quote: the config pins exactly that
  const { header, body } = tdx.parseTdxQuote(intel.quote({ reportData: Buffer.alloc(64) }))
  const hex = (b: Buffer) => b.toString('hex')
  return (relativeTo) => ({
    qeSVN: header.qeSvn,
    pceSVN: header.pceSvn,
    teeTCBSVN: hex(body.teeTcbSvn),
    qeVendorID: hex(header.qeVendorId),
    mrSeam: hex(body.mrSeam),
    xfam: hex(body.xfam),
    tdAttributes: hex(body.tdAttributes),
    mrTd: hex(body.mrTd),
    rtmrs: Object.fromEntries(body.rtmrs.map((v, i) => [String(i), hex(v)])),
    intelRootKey: where(files.root, relativeTo),
    collateral: where(files.collateral, relativeTo),
  })
}

/** What a node's supervisor serves at its configfs-tsm directory: reports from the cluster's stand-in. */
export async function standInEvidence(cvm: MachineCvm): Promise<ProduceEvidence> {
  if (cvm.kind === 'tdx') return produceTdxEvidence(await loadTdxStandIn(cvm.standInDir))
  const snp = await loadSnpStandIn(cvm.standInDir)
  return produceSnpEvidence({
    report: ({ reportData }) => snp.report({ reportData, measurement: STANDIN_LAUNCH_MEASUREMENT }),
    certificateTable: () => snp.certificateTable(),
  })
}

/** Said at the top of the workspace config mini writes. */
export function cvmConfigHeader(variant: MiniCvmVariant, dir: string): string {
  const vendor = cvmKind(variant) === 'snp' ? 'AMD' : 'Intel'
  return `# attestation ${variant}: no confidential-VM hardware runs here, so the nodes' reports come from a
# STAND-IN ${vendor} of this cluster (${dir}): every check runs, but its root below is not ${vendor}'s
# and proves nothing about hardware; \`constellation verify\` and \`status\` say so
`
}
