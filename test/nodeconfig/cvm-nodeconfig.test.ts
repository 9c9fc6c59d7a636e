import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { testCertificate } from '../support/test-ca.js'
import { INTEL_SGX_ROOT_CA } from '../../src/lib/attestation/index.js'
import { nodeCvmSettings, type NodeConfig } from '../../src/lib/nodeconfig/index.js'
import { parseNodeConfig } from '../../src/lib/nodeconfig/node-config.js'
import { stringifyYaml, YamlProblemsError } from '../../src/lib/yaml/index.js'
import type { SnpSettings, TdxSettings } from '../../src/lib/config/index.js'

function problems(text: string): string[] {
  try {
    parseNodeConfig(text, 'node.yaml')
    return []
  } catch (err) {
    if (err instanceof YamlProblemsError)
      return err.problems.map((p) => `${p.line}: ${p.path.join('.')}: ${p.message}`)
    throw err
  }
}

describe('node config: the CVM sections for the join service', () => {
  let tmp: TempDir
  let arkFile: string
  let collateral: string
  const ark = testCertificate({ cn: 'Stand-in ARK', ca: true })
  const leaf = testCertificate({ cn: 'a VCEK', ca: false, issuer: ark })
  beforeEach(async () => {
    tmp = await makeTempDir('constell-cvm-node-')
    arkFile = path.join(tmp.dir, 'ark.pem')
    collateral = tmp.dir
    await writeFile(arkFile, ark.pem)
    await writeFile(path.join(tmp.dir, 'vcek.pem'), leaf.pem)
  })
  afterEach(() => tmp.cleanup())

  const head = (variant: string) => `attestationVariant: ${variant}\ntpm: { device: /dev/tpmrm0 }\n`
  const snp = () =>
    head('gcp-sev-snp') +
    `attestation:
  gcpSEVSNP:
    bootloaderVersion: 3
    teeVersion: 0
    snpVersion: 8
    microcodeVersion: 115
    launchMeasurement: ${'ab'.repeat(48)}
    amdRootKey: ${arkFile}
    allowSMT: true
`
  const tdx = () =>
    head('qemu-tdx') +
    `attestation:
  qemuTDX:
    qeSVN: 1
    pceSVN: 2
    teeTCBSVN: "${'03'.repeat(16)}"
    mrTd: ${'cd'.repeat(48)}
    rtmrs: { "1": "${'01'.repeat(48)}" }
    intelRootKey: ${JSON.stringify(INTEL_SGX_ROOT_CA)}
    collateral: ${collateral}
`

  it('an SNP section round-trips, and resolves to the settings the join service validates with', () => {
    const cfg = parseNodeConfig(snp(), 'node.yaml')
    const again = parseNodeConfig(stringifyYaml(cfg), 'node.yaml')
    expect(again).to.deep.equal(cfg)
    const settings = nodeCvmSettings(cfg) as SnpSettings
    expect(settings.arks.map((c) => c.subject)).to.deep.equal(['CN=Stand-in ARK'])
    expect(settings.minimumTcb).to.deep.equal({ bootloader: 3, tee: 0, snp: 8, microcode: 115 })
    expect(settings.launchMeasurement).to.deep.equal(Buffer.alloc(48, 0xab))
    expect(settings).to.include({ allowSmt: true, allowMigrationAgent: false })
    // the join-config carries the measurements, not the node config
    expect(settings.measurements.size).to.equal(0)
  })

  it('a TDX section round-trips, with PEM text inline and collateral absolute', () => {
    const cfg = parseNodeConfig(tdx(), 'node.yaml')
    expect(parseNodeConfig(stringifyYaml(cfg), 'node.yaml')).to.deep.equal(cfg)
    const settings = nodeCvmSettings(cfg) as TdxSettings
    expect(settings.intelRoots[0]?.subject).to.contain('CN=Intel SGX Root CA')
    expect(settings.minimum).to.deep.equal({ qeSvn: 1, pceSvn: 2, teeTcbSvn: Buffer.alloc(16, 3) })
    expect(settings.rtmrs).to.deep.equal({ 1: Buffer.alloc(48, 1) })
    expect(settings.collateralDir).to.equal(collateral)
  })

  it('existing node configs stay valid and have no CVM settings', () => {
    const cfg: Pick<NodeConfig, 'attestationVariant' | 'attestation'> = parseNodeConfig(
      head('qemu-vtpm'),
      'node.yaml',
    )
    expect(cfg.attestation).to.equal(undefined)
    expect(nodeCvmSettings(cfg)).to.equal(undefined)
    expect(nodeCvmSettings({ attestationVariant: 'azure-tdx' })).to.equal(undefined)
  })

  const cases: Record<string, { text: () => string; want: () => string[] }> = {
    'a section of another variant': {
      text: () => snp().replace('gcp-sev-snp', 'aws-sev-snp'),
      want: () => ['4: attestation.gcpSEVSNP: is used only with attestationVariant gcp-sev-snp; remove it'],
    },
    'measurements, which come from the join-config': {
      text: () => snp() + `    measurements: { "4": { expected: "${'00'.repeat(32)}" } }\n`,
      want: () => ['12: attestation.gcpSEVSNP.measurements: unknown key'],
    },
    'a relative root path': {
      text: () => snp().replace(arkFile, 'ark.pem'),
      want: () => ['10: attestation.gcpSEVSNP.amdRootKey: must match pattern "(^/)|-----BEGIN"'],
    },
    'a root that is no CA certificate': {
      text: () => snp().replace(arkFile, path.join(tmp.dir, 'vcek.pem')),
      want: () => ['10: attestation.gcpSEVSNP.amdRootKey: CN=a VCEK is not a CA certificate'],
    },
    'a microcode version above its byte': {
      text: () => snp().replace('microcodeVersion: 115', 'microcodeVersion: 300'),
      want: () => ['8: attestation.gcpSEVSNP.microcodeVersion: must be <= 255'],
    },
    'collateral that is no directory': {
      text: () => tdx().replace(`collateral: ${collateral}`, `collateral: ${arkFile}`),
      want: () => [`11: attestation.qemuTDX.collateral: ${arkFile} is not a directory`],
    },
    'an RTMR of the wrong length': {
      text: () => tdx().replace(`"${'01'.repeat(48)}"`, `"${'01'.repeat(32)}"`),
      want: () => ['9: attestation.qemuTDX.rtmrs.1: must be 48 bytes as hex (96 hex digits)'],
    },
  }
  for (const [name, tc] of Object.entries(cases)) {
    it(`refuses ${name}, by key path and line`, () => {
      const got = problems(tc.text())
      const want = tc.want()
      expect(got, got.join('\n')).to.have.length(want.length)
      want.forEach((w, i) => expect(got[i]).to.contain(w))
    })
  }
})
