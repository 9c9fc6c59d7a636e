/**
 * A mini node's measured boot: what firmware and a boot loader would measure on a real node, done by
 * its supervisor once its swtpm is up and before any unit starts (so on every boot: PCRs reset with
 * the TPM). PCRs 0–7 get the separator firmware writes before it leaves for the boot loader; PCR 4
 * the node's boot application (its `constellation` launcher, the image's entry point); PCR 8 its
 * command line; PCR 9 the systemd units the image installs. All of it is the same on every node of
 * a cluster, so one set of expected values (written into mini's config) fits them all.
 */
import { createHash } from 'node:crypto'
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import {
  EVENT_TYPES as T,
  imageLoadEvent,
  measureBoot,
  pcrsAfter,
  type BootMeasurement,
} from '../attestation/index.js'
import type { OpenTpm } from '../tpm/index.js'

/** What the supervisor measures, from machine.json. */
export interface MachineBoot {
  /** The node's `constellation` launcher: PCR 4. */
  launcher: string
  /** The image's unit templates: PCR 9. */
  unitTemplates: string
  /** Where the log goes: securityfs' binary_bios_measurements under the node's root. */
  eventLog: string
}

/** The launcher script every node runs as `constellation`: the same bytes on every node. */
export const launcherScript = (cli: readonly string[]): string =>
  `#!/bin/sh\nexec ${cli.map((a) => `'${a}'`).join(' ')} "$@"\n`

const COMMAND_LINE = 'constellation mini node: console=ttyS0 constellation.csp=mini\0'

interface BootImage {
  launcher: Buffer
  /** Where the launcher was found: the device path of the image load event. */
  launcherPath: string
  units: Buffer
}

/** The log's events, in the order firmware and a boot loader write them. */
function bootMeasurements(image: BootImage): BootMeasurement[] {
  const separator = (pcr: number): BootMeasurement => ({ pcr, type: T.EV_SEPARATOR, data: Buffer.alloc(4) })
  return [
    {
      pcr: 0,
      type: T.EV_S_CRTM_VERSION,
      data: Buffer.from('constellation mini stand-in firmware\0', 'utf16le'),
    },
    ...[0, 1, 2, 3, 4, 5, 6, 7].map(separator),
    { pcr: 4, type: T.EV_EFI_ACTION, data: Buffer.from('Calling EFI Application from Boot Option') },
    {
      pcr: 4,
      type: T.EV_EFI_BOOT_SERVICES_APPLICATION,
      // as for a PE image: the digest is of the image, the event data says where it was loaded from
      data: imageLoadEvent(image.launcher.length, Buffer.from(image.launcherPath)),
      digest: sha256(image.launcher),
    },
    { pcr: 8, type: T.EV_IPL, data: Buffer.from(COMMAND_LINE) },
    {
      pcr: 9,
      type: T.EV_IPL,
      data: Buffer.from('systemd units of the image\0'),
      digest: sha256(image.units),
    },
  ]
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest()

/** The unit templates as one byte string: names and contents, sorted by name. */
async function readUnits(dir: string): Promise<Buffer> {
  const names = (await readdir(dir)).sort()
  const parts: Buffer[] = []
  for (const name of names)
    parts.push(Buffer.from(`${name}\0`), await readFile(path.join(dir, name)), Buffer.from('\0'))
  return Buffer.concat(parts)
}

/** Measures the node's boot into its TPM and writes the log the issuer attaches to every document. */
export async function measureNodeBoot(open: OpenTpm, boot: MachineBoot): Promise<void> {
  const image: BootImage = {
    launcher: await readFile(boot.launcher),
    launcherPath: boot.launcher,
    units: await readUnits(boot.unitTemplates),
  }
  const log = await measureBoot(open, bootMeasurements(image))
  await mkdir(path.dirname(boot.eventLog), { recursive: true, mode: 0o755 })
  await writeFile(boot.eventLog, log, { mode: 0o644 })
}

/** The PCR values every node of a cluster shows after its measured boot: what mini's config expects. */
export async function bootPcrs(cli: readonly string[], unitTemplates: string): Promise<Map<number, Buffer>> {
  const image = {
    launcher: Buffer.from(launcherScript(cli)),
    launcherPath: '',
    units: await readUnits(unitTemplates),
  }
  return pcrsAfter(bootMeasurements(image))
}
