import { expect } from '../support/chai.js'
import { isHostPort } from '../../src/lib/system/index.js'
import { YamlProblemsError, stringifyYaml } from '../../src/lib/yaml/index.js'
import { parseConfig, parseState, isCidr } from '../../src/lib/config/load.js'
import { defaultConfig, defaultState } from '../../src/lib/config/generate.js'

const validConfig = stringifyYaml(defaultConfig({ kubernetes: 'v1.31', variant: 'qemu-vtpm', name: 'demo' }))
const validState = stringifyYaml(
  defaultState('demo', '10.0.0.1', (n) => Buffer.alloc(n, 7), Buffer.alloc(32, 0x41)),
)

function problemsOf(fn: () => unknown): string[] {
  try {
    fn()
  } catch (err) {
    if (err instanceof YamlProblemsError)
      return err.problems.map((p) => `${p.line}:${p.column} ${p.path.join('.')}: ${p.message}`)
    throw err
  }
  return []
}

describe('config loading', () => {
  it('accepts a freshly generated config and state', () => {
    const config = parseConfig(validConfig, 'c.yaml')
    expect(config.kubernetesVersion).to.equal('v1.31.13')
    expect(Object.keys(config.attestation.qemuVTPM?.measurements ?? {})).to.deep.equal([
      '4',
      '8',
      '9',
      '11',
      '12',
      '13',
      '15',
    ])
    expect(parseState(validState, 's.yaml').infrastructure.initSecret).to.equal('41'.repeat(32))
  })

  const cases: Record<string, { edit: (t: string) => string; want: string[] }> = {
    'unknown top-level key, with its line': {
      edit: (t) => t.replace('serviceCIDR:', 'colour: blue\nserviceCIDR:'),
      want: ['4:1 colour: unknown key'],
    },
    'unknown nested key': {
      edit: (t) => t.replace('warnOnly: false', 'warnOnly: false\n        enforce: true'),
      want: ['11:9 attestation.qemuVTPM.measurements.4.enforce: unknown key'],
    },
    'unsupported Kubernetes version lists the supported ones': {
      edit: (t) => t.replace('v1.31.13', 'v1.99.0'),
      want: [
        '3:1 kubernetesVersion: Kubernetes version "v1.99.0" is not supported; supported versions are v1.30.14, v1.31.13, v1.32.9',
      ],
    },
    'a version without a patch is refused': {
      edit: (t) => t.replace('v1.31.13', 'v1.31'),
      want: [
        '3:1 kubernetesVersion: "v1.31" must name a patch release; supported versions are v1.30.14, v1.31.13, v1.32.9',
      ],
    },
    'a measurement that is not 32 bytes of hex': {
      edit: (t) => t.replace('0'.repeat(64), 'abc'),
      want: ['9:9 attestation.qemuVTPM.measurements.4.expected: must be 32 bytes as hex (64 hex digits)'],
    },
    'a PCR index out of range': {
      edit: (t) => t.replace('"4":', '"24":'),
      want: ['8:7 attestation.qemuVTPM.measurements.24: is not an allowed key here'],
    },
    'no measurements at all (would trust any node)': {
      edit: (t) => t.replace(/measurements:\n[\s\S]*$/, 'measurements: {}\n'),
      want: ['7:5 attestation.qemuVTPM.measurements: must NOT have fewer than 1 properties'],
    },
    'a bad service CIDR': {
      edit: (t) => t.replace('10.96.0.0/12', '10.96.0.0/40'),
      want: ['4:1 serviceCIDR: "10.96.0.0/40" is not a CIDR like 10.96.0.0/12'],
    },
    'all problems at once': {
      edit: (t) => t.replace('v1.31.13', 'v1.99.0').replace('name: demo', 'nam: demo'),
      want: ['1:1 name: required key is missing', '2:1 nam: unknown key', '3:1 kubernetesVersion'],
    },
  }
  for (const [name, tc] of Object.entries(cases)) {
    it(`config: ${name}`, () => {
      const got = problemsOf(() => parseConfig(tc.edit(validConfig), 'c.yaml'))
      expect(got, got.join('\n')).to.have.length(tc.want.length)
      tc.want.forEach((w, i) => expect(got[i]).to.contain(w))
    })
  }

  it('a YAML syntax error names the line', () => {
    const got = problemsOf(() => parseConfig('version: v4\nname: [unclosed\n', 'c.yaml'))
    expect(got[0]).to.match(/^\d+:\d+ : /)
  })

  it('a duplicate key is an error, not a silent override', () => {
    expect(problemsOf(() => parseConfig(validConfig + 'name: other\n', 'c.yaml'))[0]).to.match(
      /unique|duplicate/i,
    )
  })

  it('state: unknown key and a bad endpoint', () => {
    const text = validState
      .replace('clusterEndpoint: 10.0.0.1', 'clusterEndpoint: "http://x"')
      .replace('uid:', 'colour: x\n  uid:')
    const got = problemsOf(() => parseState(text, 's.yaml'))
    expect(got.join('\n')).to.contain('infrastructure.colour: unknown key')
    expect(got.join('\n')).to.contain('infrastructure.clusterEndpoint: "http://x" is not a host or host:port')
  })

  it('state: an init secret shorter than 16 bytes is refused at its line', () => {
    const secret = '41'.repeat(32)
    expect(validState).to.include(secret)
    const short = validState.replace(secret, 'ab'.repeat(15))
    expect(() => parseState(short, 's.yaml')).to.throw(
      /s\.yaml:\d+:\d+: infrastructure\.initSecret: is 15 bytes; an init secret needs at least 16 random bytes/,
    )
    expect(() => parseState(validState.replace(secret, 'ab'.repeat(16)), 's.yaml')).not.to.throw()
  })

  it('the error message names the file, line and key path', () => {
    expect(() =>
      parseConfig(
        validConfig.replace('serviceCIDR:', 'colour: 1\nserviceCIDR:'),
        '/ws/constellation-conf.yaml',
      ),
    ).to.throw('/ws/constellation-conf.yaml:4:1: colour: unknown key')
  })

  const hostPorts: Record<string, boolean> = {
    '10.0.0.1': true,
    '10.0.0.1:9000': true,
    'node-1.example.com:443': true,
    '[::1]:9000': true,
    'http://x': false,
    'host:0': false,
    'host:99999': false,
    '': false,
  }
  for (const [value, want] of Object.entries(hostPorts)) {
    it(`isHostPort(${JSON.stringify(value)}) is ${want}`, () => expect(isHostPort(value)).to.equal(want))
  }
  it('isCidr', () => {
    expect(['10.0.0.0/8', 'fd00::/64'].map(isCidr)).to.deep.equal([true, true])
    expect(['10.0.0.0', '10.0.0.0/33', 'x/8', '10.0.0.0/8/1'].map(isCidr)).to.deep.equal([
      false,
      false,
      false,
      false,
    ])
  })
})
