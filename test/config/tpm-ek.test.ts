import { generateKeyPairSync } from 'node:crypto'
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { testCertificate } from '../support/test-ca.js'
import { stringifyYaml, YamlProblemsError } from '../../src/lib/yaml/index.js'
import { configWarnings, parseConfig } from '../../src/lib/config/load.js'
import { defaultConfig } from '../../src/lib/config/generate.js'
import { applyMeasurementsUpdate } from '../../src/lib/config/measurements-update.js'
import {
  planMeasurementsUpdate,
  readConfigMeasurements,
  validatorForConfig,
  type ClusterConfig,
} from '../../src/lib/config/index.js'
import { joinMeasurementsFromConfig } from '../../src/lib/config/join-config-update.js'
import { CliError } from '../../src/lib/errors/index.js'

/** A generated tpm-ek config with `roots` as its list of roots. */
function configText(roots: string[]): string {
  const config = defaultConfig({ kubernetes: 'v1.31', variant: 'tpm-ek', name: 'demo' })
  config.attestation.tpmEK!.roots = roots
  return stringifyYaml(config)
}

function problemsOf(fn: () => unknown): string[] {
  try {
    fn()
  } catch (err) {
    if (err instanceof YamlProblemsError)
      return err.problems.map((p) => `${p.line} ${p.path.join('.')}: ${p.message}`)
    throw err
  }
  return []
}

describe('workspace config: attestation.tpmEK', () => {
  let tmp: TempDir
  let file: string
  const ca = testCertificate({ cn: 'Vendor TPM Root', ca: true })
  const otherCa = testCertificate({ cn: 'Other Vendor Root', ca: true })
  const leaf = testCertificate({ cn: 'an EK', ca: false, issuer: ca })
  beforeEach(async () => {
    tmp = await makeTempDir('constell-tpmek-config-')
    file = path.join(tmp.dir, 'constellation-conf.yaml')
    await mkdir(path.join(tmp.dir, 'roots'))
    await writeFile(path.join(tmp.dir, 'roots', 'vendor.pem'), ca.pem + otherCa.pem)
    await writeFile(path.join(tmp.dir, 'vendor.der'), otherCa.der)
  })
  afterEach(() => tmp.cleanup())

  it('config generate -a tpm-ek: valid, with warnings for the empty roots and placeholder measurements', () => {
    const config = parseConfig(configText([]), file)
    expect(config.attestation.tpmEK?.roots).to.deep.equal([])
    expect(configWarnings(config).map((w) => w.path.join('.'))).to.deep.equal([
      'attestation.tpmEK.measurements',
      'attestation.tpmEK.roots',
    ])
    expect(configWarnings(config)[1]?.message).to.match(/^is empty: no TPM will pass attestation/)
    // the validator refuses to run without roots, as it refuses without measurements
    expect(() => validatorForConfig(config)).to.throw(CliError, 'needs manufacturer root certificates')
  })

  it('takes inline PEM, PEM bundles and DER files; relative paths are from the config file', () => {
    const config = parseConfig(configText([ca.pem, 'roots/vendor.pem', 'vendor.der']), file)
    expect(config.attestation.tpmEK?.roots).to.deep.equal([
      ca.pem,
      path.join(tmp.dir, 'roots', 'vendor.pem'),
      path.join(tmp.dir, 'vendor.der'),
    ])
    const validator = validatorForConfig(config)
    expect(validator.variant).to.equal('tpm-ek')
    expect(validator.oid).to.equal('1.3.9900.5.100')
    expect(typeof validator.challengeActivation).to.equal('function')
  })

  it('names every root that is no CA certificate, by its list index and line', async () => {
    const key = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    })
    await writeFile(path.join(tmp.dir, 'key.pem'), key)
    await writeFile(path.join(tmp.dir, 'notes.txt'), 'trust the vendor\n')
    await writeFile(path.join(tmp.dir, 'leaf.pem'), leaf.pem)
    const got = problemsOf(() =>
      parseConfig(
        configText([
          ca.pem,
          'missing.pem',
          '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n',
          'key.pem',
          'notes.txt',
          'leaf.pem',
          'roots',
          '-----BEGIN CERTIFICATE-----\nno end',
        ]),
        file,
      ),
    )
    const at = (i: number) => new RegExp(`^\\d+ attestation\\.tpmEK\\.roots\\.${i}: `)
    expect(got, got.join('\n')).to.have.length(7)
    expect(got[0])
      .to.match(at(1))
      .and.to.contain(`reading ${path.join(tmp.dir, 'missing.pem')}: ENOENT`)
    expect(got[1]).to.match(at(2)).and.to.contain('the PEM text is not a PEM certificate (')
    expect(got[2])
      .to.match(at(3))
      .and.to.contain('key.pem holds a PEM PRIVATE KEY block, which is not a certificate')
    expect(got[3]).to.match(at(4)).and.to.contain('notes.txt is neither a PEM nor a DER certificate')
    expect(got[4])
      .to.match(at(5))
      .and.to.contain('CN=an EK is not a CA certificate (basicConstraints CA:TRUE)')
    expect(got[5])
      .to.match(at(6))
      .and.to.contain(`${path.join(tmp.dir, 'roots')} is not a regular file`)
    expect(got[6]).to.match(at(7)).and.to.contain('the PEM text holds no complete PEM CERTIFICATE block')
  })

  it('allows one attestation section, and tpmEK needs its roots key', () => {
    const both = configText([ca.pem]).replace(
      'attestation:\n',
      `attestation:\n  qemuVTPM:\n    measurements:\n      "4": { expected: "${'00'.repeat(32)}" }\n`,
    )
    expect(problemsOf(() => parseConfig(both, file)).join('\n')).to.contain(
      'attestation: must NOT have more than 1 properties',
    )
    const noRoots = configText([]).replace('    roots: []\n', '')
    expect(problemsOf(() => parseConfig(noRoots, file))).to.deep.equal([
      '7 attestation.tpmEK.roots: required key is missing',
    ])
  })

  it('validatorForConfig names a root that went bad after loading, by its key path', () => {
    const config = parseConfig(configText([ca.pem]), file)
    const broken: ClusterConfig = {
      ...config,
      attestation: { tpmEK: { ...config.attestation.tpmEK!, roots: [ca.pem, '/nonexistent/root.pem'] } },
    }
    expect(() => validatorForConfig(broken)).to.throw(
      CliError,
      /^attestation\.tpmEK\.roots\[1\]: reading \/nonexistent\/root\.pem: ENOENT/,
    )
  })

  it("config measurements and join-config update use the tpmEK section's measurements", async () => {
    await writeFile(file, configText([ca.pem]))
    const { text, measurements } = await readConfigMeasurements(file)
    const pcrs = new Map(Object.keys(measurements).map((i) => [Number(i), Buffer.alloc(32, 0xcd)]))
    const updated = applyMeasurementsUpdate(text, file, planMeasurementsUpdate(measurements, pcrs))
    expect(parseConfig(updated, file).attestation.tpmEK?.measurements['4']?.expected).to.equal(
      'cd'.repeat(32),
    )
    await writeFile(file, updated)
    const join = await joinMeasurementsFromConfig(file)
    expect(join.get(4)?.expected).to.deep.equal(Buffer.alloc(32, 0xcd))
    expect(join.get(15)?.expected).to.deep.equal(Buffer.alloc(32))
  })
})
