import { expect } from '../support/chai.js'
import { ignitionFile } from '../../src/lib/bootstrapdata/ignition-files.js'
import { YamlProblemsError } from '../../src/lib/yaml/index.js'
import { parseBootstrapObjects } from '../../src/lib/bootstrapdata/parse.js'
import type { SpecFormat } from '../../src/lib/bootstrapdata/validate.js'

/** A valid input whose only file carries the attribute under test (on line 18). */
function input(attribute: string): string {
  return `apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata: { name: demo }
spec: { controlPlaneEndpoint: { host: 10.0.0.1, port: 6443 } }
---
apiVersion: cluster.x-k8s.io/v1beta1
kind: Machine
metadata: { name: m0, labels: { cluster.x-k8s.io/control-plane: "" } }
spec: { clusterName: demo, version: v1.31.13, bootstrap: { configRef: { name: cfg } } }
---
apiVersion: bootstrap.cluster.x-k8s.io/v1beta1
kind: KubeadmConfig
metadata: { name: cfg }
spec:
  files:
    - path: /etc/a
      content: x
      ${attribute}
`
}

function problemsOf(attribute: string, format: SpecFormat): string {
  try {
    parseBootstrapObjects(input(attribute), 'cluster.yaml', { format })
    return ''
  } catch (err) {
    expect(err).to.be.instanceOf(YamlProblemsError)
    return (err as Error).message
  }
}

const ACCEPTED_PERMISSIONS = ['644', '0644', '0600', '0755', '0400', '0777', '000']
const REFUSED_PERMISSIONS = [
  '7777',
  '4755',
  '2755',
  '1777',
  '0o644',
  '07777',
  '00644',
  '64',
  '0888',
  '+644',
  ' 644',
  'rw-r--r--',
]
const ACCEPTED_OWNERS = ['root', 'root:root', 'www-data:adm', '_apt', 'john.doe:Staff', 'host$:wheel']
const REFUSED_OWNERS = [
  'root:root; touch /tmp/x',
  '$(id)',
  'root:',
  ':root',
  'root:root:root',
  'root root',
  '-root',
  '../etc',
  '1root',
  '4294967295',
]

describe('bootstrap data file permissions and owner (both formats)', () => {
  for (const format of ['cloud-config', 'ignition'] as const) {
    for (const value of ACCEPTED_PERMISSIONS) {
      it(`${format}: accepts permissions ${JSON.stringify(value)}`, () =>
        expect(problemsOf(`permissions: "${value}"`, format)).to.equal(''))
    }
    for (const value of REFUSED_PERMISSIONS) {
      it(`${format}: refuses permissions ${JSON.stringify(value)}, naming the key and line`, () =>
        expect(problemsOf(`permissions: "${value}"`, format)).to.match(
          /cluster\.yaml:18:\d+: spec\.files\[0\]\.permissions: .*\(KubeadmConfig "cfg"\)/,
        ))
    }
    for (const value of ACCEPTED_OWNERS) {
      it(`${format}: accepts owner ${JSON.stringify(value)}`, () =>
        expect(problemsOf(`owner: "${value}"`, format)).to.equal(''))
    }
    for (const value of REFUSED_OWNERS) {
      it(`${format}: refuses owner ${JSON.stringify(value)}, naming the key and line`, () =>
        expect(problemsOf(`owner: "${value}"`, format)).to.match(
          /cluster\.yaml:18:\d+: spec\.files\[0\]\.owner: .*is not a valid owner.*\(KubeadmConfig "cfg"\)/,
        ))
    }
  }

  it('says why a setuid mode is refused', () =>
    expect(problemsOf('permissions: "4755"', 'cloud-config')).to.match(/setuid, setgid or sticky/))

  it('numeric ids: Ignition takes them, cloud-init only looks owners up by name', () => {
    expect(problemsOf('owner: "1000:0"', 'ignition')).to.equal('')
    expect(problemsOf('owner: "1000:0"', 'cloud-config')).to.match(
      /spec\.files\[0\]\.owner: numeric ids do not work with cloud-config/,
    )
  })

  it('Ignition writes numeric owners as ids and names as names', () => {
    expect(ignitionFile({ path: '/a', content: 'x', owner: '1000:0' })).to.deep.include({
      user: { id: 1000 },
      group: { id: 0 },
    })
    expect(ignitionFile({ path: '/a', content: 'x', owner: 'ops' })).to.deep.include({
      user: { name: 'ops' },
    })
  })
})
