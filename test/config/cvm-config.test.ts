import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { testCertificate } from '../support/test-ca.js'
import { YamlProblemsError } from '../../src/lib/yaml/index.js'
import { configWarnings, parseConfig } from '../../src/lib/config/load.js'
import { defaultConfig, renderConfig } from '../../src/lib/config/generate.js'
import { applyMeasurementsUpdate } from '../../src/lib/config/measurements-update.js'
import {
  configuredAttestation,
  planMeasurementsUpdate,
  readConfigMeasurements,
  snpSettings,
  tdxSettings,
  validatorSettingsForConfig,
} from '../../src/lib/config/index.js'
import { ATTESTATION_VARIANTS, type AttestationVariant } from '../../src/lib/attestation/index.js'
import { CliError } from '../../src/lib/errors/index.js'

const generated = (variant: AttestationVariant) =>
  renderConfig(defaultConfig({ kubernetes: 'v1.31', variant, name: 'demo' }))

/** `line path: message` of every problem, or [] when the text loads. */
function problemsOf(text: string, file: string): string[] {
  try {
    parseConfig(text, file)
  } catch (err) {
    if (err instanceof YamlProblemsError)
      return err.problems.map((p) => `${p.line} ${p.path.join('.')}: ${p.message}`)
    throw err
  }
  return []
}

/** 1-based line of the first line of `text` starting (after indentation) with `start`. */
const lineOf = (text: string, start: string) =>
  text.split('\n').findIndex((l) => l.trimStart().startsWith(start)) + 1

/** Replaces the value of `key:` (one line, or a block scalar below it) with `value`. */
function setField(text: string, key: string, value: string): string {
  const lines = text.split('\n')
  const i = lines.findIndex((l) => l.trimStart().startsWith(`${key}:`))
  if (i < 0) throw new Error(`no ${key} in the text`)
  const indent = lines[i]!.length - lines[i]!.trimStart().length
  let end = i + 1
  while (end < lines.length && lines[end]!.length - lines[end]!.trimStart().length > indent) end++
  lines.splice(i, end - i, `${' '.repeat(indent)}${key}: ${value}`)
  return lines.join('\n')
}

/** Adds `key: value` to the section `section` (after its header line). */
const addField = (text: string, section: string, key: string, value: string) =>
  text.replace(`  ${section}:\n`, `  ${section}:\n    ${key}: ${value}\n`)

describe('workspace config: the confidential-VM sections', () => {
  let tmp: TempDir
  let file: string
  const ca = testCertificate({ cn: 'Stand-in ARK', ca: true })
  const leaf = testCertificate({ cn: 'a VCEK', ca: false, issuer: ca })
  beforeEach(async () => {
    tmp = await makeTempDir('constell-cvm-config-')
    file = path.join(tmp.dir, 'constellation-conf.yaml')
    await mkdir(path.join(tmp.dir, 'roots'))
    await mkdir(path.join(tmp.dir, 'collateral'))
    await writeFile(path.join(tmp.dir, 'roots', 'ark.pem'), ca.pem)
    await writeFile(path.join(tmp.dir, 'roots', 'vcek.pem'), leaf.pem)
  })
  afterEach(() => tmp.cleanup())

  it('every generated section loads, with warnings for what the operator must fill in', () => {
    const want: Partial<Record<AttestationVariant, string[]>> = {
      'aws-sev-snp': ['attestation.awsSEVSNP.measurements', 'attestation.awsSEVSNP'],
      'gcp-sev-snp': ['attestation.gcpSEVSNP.measurements', 'attestation.gcpSEVSNP'],
      'azure-sev-snp': ['attestation.azureSEVSNP.measurements', 'attestation.azureSEVSNP'],
      'qemu-tdx': ['attestation.qemuTDX.measurements', 'attestation.qemuTDX'],
      'azure-tdx': ['attestation.azureTDX.measurements', 'attestation.azureTDX'],
    }
    for (const [variant, paths] of Object.entries(want)) {
      const config = parseConfig(generated(variant as AttestationVariant), file)
      expect(
        configWarnings(config).map((w) => w.path.join('.')),
        variant,
      ).to.deep.equal(paths)
    }
  })

  const snpCases: Record<string, { edit: (t: string) => string; at: string; want: string }> = {
    'a version above its byte': {
      edit: (t) => setField(t, 'bootloaderVersion', '256'),
      at: 'bootloaderVersion',
      want: 'attestation.awsSEVSNP.bootloaderVersion: must be <= 255',
    },
    'a negative version': {
      edit: (t) => setField(t, 'teeVersion', '-1'),
      at: 'teeVersion',
      want: 'attestation.awsSEVSNP.teeVersion: must be >= 0',
    },
    "Constellation's `latest`, which needs its API": {
      edit: (t) => setField(t, 'snpVersion', 'latest'),
      at: 'snpVersion',
      want: 'attestation.awsSEVSNP.snpVersion: must be integer',
    },
    'a launch measurement one byte short': {
      edit: (t) => addField(t, 'awsSEVSNP', 'launchMeasurement', 'ab'.repeat(47)),
      at: 'launchMeasurement',
      want: 'attestation.awsSEVSNP.launchMeasurement: must be 48 bytes as hex (96 hex digits)',
    },
    'a root that is no CA certificate': {
      edit: (t) => setField(t, 'amdRootKey', 'roots/vcek.pem'),
      at: 'amdRootKey',
      want: 'attestation.awsSEVSNP.amdRootKey: CN=a VCEK is not a CA certificate',
    },
    'a root that is not PEM': {
      edit: (t) =>
        setField(t, 'amdRootKey', '"-----BEGIN CERTIFICATE-----\\nAAAA\\n-----END CERTIFICATE-----\\n"'),
      at: 'amdRootKey',
      want: 'attestation.awsSEVSNP.amdRootKey: the PEM text is not a PEM certificate (',
    },
    'a signing key pin in a missing file, relative to the config': {
      edit: (t) => addField(t, 'awsSEVSNP', 'amdSigningKey', 'roots/ask.pem'),
      at: 'amdSigningKey',
      want: 'attestation.awsSEVSNP.amdSigningKey: reading /', // …/roots/ask.pem: ENOENT
    },
    'an unknown key': {
      edit: (t) => addField(t, 'awsSEVSNP', 'firmwareSignerConfig', '{}'),
      at: 'firmwareSignerConfig',
      want: 'attestation.awsSEVSNP.firmwareSignerConfig: unknown key',
    },
    'a policy switch that is no boolean': {
      edit: (t) => setField(t, 'allowSMT', 'maybe'),
      at: 'allowSMT',
      want: 'attestation.awsSEVSNP.allowSMT: must be boolean',
    },
  }
  for (const [name, tc] of Object.entries(snpCases)) {
    it(`awsSEVSNP: ${name} is named by key path and line`, () => {
      const text = tc.edit(generated('aws-sev-snp'))
      const got = problemsOf(text, file)
      expect(got, got.join('\n')).to.have.length(1)
      expect(got[0]).to.contain(`${lineOf(text, `${tc.at}:`)} ${tc.want}`)
    })
  }

  const tdxCases: Record<string, { edit: (t: string) => string; at: string; want: string }> = {
    'an SVN above 16 bits': {
      edit: (t) => setField(t, 'qeSVN', '65536'),
      at: 'qeSVN',
      want: 'attestation.qemuTDX.qeSVN: must be <= 65535',
    },
    'a TEE_TCB_SVN of 15 bytes': {
      edit: (t) => setField(t, 'teeTCBSVN', `"${'00'.repeat(15)}"`),
      at: 'teeTCBSVN',
      want: 'attestation.qemuTDX.teeTCBSVN: must be 16 bytes as hex (32 hex digits)',
    },
    'an XFAM of 9 bytes': {
      edit: (t) => addField(t, 'qemuTDX', 'xfam', 'e7'.repeat(9)),
      at: 'xfam',
      want: 'attestation.qemuTDX.xfam: must be 8 bytes as hex (16 hex digits)',
    },
    'an RTMR index beyond 3': {
      edit: (t) => addField(t, 'qemuTDX', 'rtmrs', `{ "4": "${'00'.repeat(48)}" }`),
      at: 'rtmrs',
      want: 'attestation.qemuTDX.rtmrs.4: is not an allowed key here',
    },
    'an MRTD that is not hex': {
      edit: (t) => addField(t, 'qemuTDX', 'mrTd', 'zz'.repeat(48)),
      at: 'mrTd',
      want: 'attestation.qemuTDX.mrTd: must be 48 bytes as hex (96 hex digits)',
    },
    'an Intel root that is no CA certificate': {
      edit: (t) => setField(t, 'intelRootKey', 'roots/vcek.pem'),
      at: 'intelRootKey',
      want: 'attestation.qemuTDX.intelRootKey: CN=a VCEK is not a CA certificate',
    },
    'a collateral path that is a file': {
      edit: (t) => addField(t, 'qemuTDX', 'collateral', 'roots/ark.pem'),
      at: 'collateral',
      want: `attestation.qemuTDX.collateral: ${path.sep}`, // …/roots/ark.pem is not a directory
    },
    'a missing intelRootKey': {
      edit: (t) => setField(t, 'intelRootKey', '~').replace(/ *intelRootKey: ~\n/, ''),
      at: 'measurements', // a missing key is reported at the first line of its map
      want: 'attestation.qemuTDX.intelRootKey: required key is missing',
    },
  }
  for (const [name, tc] of Object.entries(tdxCases)) {
    it(`qemuTDX: ${name} is named by key path and line`, () => {
      const text = tc.edit(generated('qemu-tdx'))
      const got = problemsOf(text, file)
      expect(got, got.join('\n')).to.have.length(1)
      expect(got[0]).to.contain(`${lineOf(text, `${tc.at}:`)} ${tc.want}`)
    })
  }

  it('allows one section under attestation', () => {
    const text = generated('azure-tdx').replace(
      'attestation:\n',
      `attestation:\n  qemuVTPM:\n    measurements:\n      "4": { expected: "${'00'.repeat(32)}" }\n`,
    )
    expect(problemsOf(text, file)).to.deep.equal([
      `${lineOf(text, 'attestation:')} attestation: must NOT have more than 1 properties`,
    ])
  })

  it('resolves relative paths against the config directory, and reads the SNP settings', () => {
    let text = setField(generated('gcp-sev-snp'), 'amdRootKey', 'roots/ark.pem')
    text = addField(text, 'gcpSEVSNP', 'amdSigningKey', 'roots/ark.pem')
    text = addField(text, 'gcpSEVSNP', 'launchMeasurement', 'ab'.repeat(48))
    const config = parseConfig(text, file)
    const got = configuredAttestation(config)
    expect(got).to.include({ variant: 'gcp-sev-snp', key: 'gcpSEVSNP' })
    expect(got.roots).to.deep.equal([])
    if (got.variant !== 'gcp-sev-snp') throw new Error('unreachable')
    expect(got.section.amdRootKey).to.equal(path.join(tmp.dir, 'roots', 'ark.pem'))
    const settings = snpSettings(got.section)
    expect(settings.arks.map((c) => c.subject)).to.deep.equal(['CN=Stand-in ARK'])
    expect(settings.signingKeyPins?.map((c) => c.subject)).to.deep.equal(['CN=Stand-in ARK'])
    expect(settings.minimumTcb).to.deep.equal({ bootloader: 2, tee: 0, snp: 6, microcode: 93 })
    expect(settings.launchMeasurement).to.deep.equal(Buffer.alloc(48, 0xab))
    expect(settings).to.include({ allowMigrationAgent: false, allowSmt: true })
    expect(settings.measurements.get(4)?.expected).to.deep.equal(Buffer.alloc(32))
  })

  it('a hand-written SNP section without the policy switches refuses both', () => {
    const text = generated('azure-sev-snp').replace(
      / *allowMigrationAgent: false\n.*\n *allowSMT: true\n/,
      '',
    )
    const section = parseConfig(text, file).attestation.azureSEVSNP!
    expect(section).to.include({ allowMigrationAgent: false, allowSMT: false })
    // the generated bundle holds AMD's ARKs for Milan, Genoa and Turin
    expect(snpSettings(section).arks.map((c) => c.subject.split('CN=')[1])).to.deep.equal([
      'ARK-Milan',
      'ARK-Genoa',
      'ARK-Turin',
    ])
  })

  it('reads the TDX settings: hex decoded, RTMRs by index, collateral absolute', () => {
    let text = generated('azure-tdx')
    for (const [key, value] of [
      ['collateral', 'collateral'],
      ['rtmrs', `{ "0": "${'01'.repeat(48)}", "3": "${'03'.repeat(48)}" }`],
      ['mrTd', 'cd'.repeat(48)],
      ['tdAttributes', '"0000001000000000"'],
      ['xfam', 'e71a060000000000'],
      ['mrSeam', 'ef'.repeat(48)],
    ])
      text = addField(text, 'azureTDX', key!, value!)
    const config = parseConfig(text, file)
    expect(configWarnings(config).map((w) => w.path.join('.'))).to.deep.equal([
      'attestation.azureTDX.measurements',
    ])
    const settings = tdxSettings(config.attestation.azureTDX!)
    expect(settings.intelRoots.map((c) => c.subject)).to.have.length(1)
    expect(settings.minimum).to.deep.equal({ qeSvn: 0, pceSvn: 0, teeTcbSvn: Buffer.alloc(16) })
    expect(settings.qeVendorId?.toString('hex')).to.equal('939a7233f79c4ca9940a0db3957f0607')
    expect(settings.rtmrs).to.deep.equal({ 0: Buffer.alloc(48, 1), 3: Buffer.alloc(48, 3) })
    expect(settings.mrTd).to.deep.equal(Buffer.alloc(48, 0xcd))
    expect(settings.mrSeam).to.deep.equal(Buffer.alloc(48, 0xef))
    expect(settings.xfam?.toString('hex')).to.equal('e71a060000000000')
    expect(settings.tdAttributes?.toString('hex')).to.equal('0000001000000000')
    expect(settings.collateralDir).to.equal(path.join(tmp.dir, 'collateral'))
  })

  it('names a root that went bad after loading by its key path', () => {
    const config = parseConfig(setField(generated('qemu-tdx'), 'intelRootKey', 'roots/ark.pem'), file)
    config.attestation.qemuTDX!.intelRootKey = '/nonexistent/intel.pem'
    expect(() => validatorSettingsForConfig(config)).to.throw(
      CliError,
      /^attestation\.qemuTDX\.intelRootKey: reading \/nonexistent\/intel\.pem: ENOENT/,
    )
  })

  it('configuredAttestation gives variant, key, measurements and section for every variant', () => {
    for (const variant of ATTESTATION_VARIANTS) {
      const config = parseConfig(generated(variant), file)
      const got = configuredAttestation(config)
      expect(got.variant).to.equal(variant)
      const section = (config.attestation as Record<string, unknown>)[got.key]
      expect(got.section, variant).to.deep.equal(section)
      expect(got.measurements).to.equal(got.section.measurements)
      expect(Object.keys(got.measurements)).to.have.length(7)
    }
  })

  it("config measurements writes a CVM section's measurements", async () => {
    await writeFile(file, generated('azure-sev-snp'))
    const { text, measurements, attestation } = await readConfigMeasurements(file)
    expect(attestation.variant).to.equal('azure-sev-snp')
    const pcrs = new Map(Object.keys(measurements).map((i) => [Number(i), Buffer.alloc(32, 0xcd)]))
    const updated = applyMeasurementsUpdate(text, file, planMeasurementsUpdate(measurements, pcrs))
    const section = parseConfig(updated, file).attestation.azureSEVSNP
    expect(section?.measurements['4']?.expected).to.equal('cd'.repeat(32))
    expect(section?.measurements['15']?.expected).to.equal('00'.repeat(32))
    // only the expected values changed: the comments and the roots are as generated
    expect(updated.replaceAll('cd'.repeat(32), '00'.repeat(32))).to.equal(text)
  })
})
