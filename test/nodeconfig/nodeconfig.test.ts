import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { testCertificate } from '../support/test-ca.js'
import { CliError } from '../../src/lib/errors/index.js'
import { nodeValidatorOptions } from '../../src/wiring/node.js'
import { parseBootstrapperNodeConfig, type StaticMetadata } from '../../src/lib/nodeconfig/index.js'
import { parseNodeConfig } from '../../src/lib/nodeconfig/node-config.js'
import { YamlProblemsError } from '../../src/lib/yaml/index.js'

const full = `attestationVariant: qemu-vtpm
tpm:
  swtpm: 127.0.0.1:2321
root: /tmp/node
initServer:
  listen: 127.0.0.1:9000
initSecretHash: $2a$10$abcdefghijklmnopqrstuu5ySmH6TgnwhSUCqSnQRvSWdkm1rHHQe
stateDisk:
  device: /tmp/node/state.img
  pbkdf: { type: pbkdf2, iterations: 1000 }
metadata:
  provider: static
  self: { name: cp-0, role: control-plane, vpcIP: 10.0.0.2 }
  loadBalancerEndpoint: 10.0.0.2:6443
`

function problems(text: string, require?: Array<'initSecretHash' | 'stateDisk' | 'metadata'>): string[] {
  try {
    parseNodeConfig(text, 'node.yaml', { require })
    return []
  } catch (err) {
    if (err instanceof YamlProblemsError)
      return err.problems.map((p) => `${p.line}: ${p.path.join('.')}: ${p.message}`)
    throw err
  }
}

describe('node config', () => {
  it('fills defaults from the root', () => {
    const cfg = parseNodeConfig(full, 'node.yaml')
    expect(cfg.kubeadm).to.equal('/tmp/node/run/state/bin/kubeadm')
    expect(cfg.verifyService.listen).to.equal('0.0.0.0:30081')
    expect(cfg.joinService?.listen).to.equal('0.0.0.0:30090')
    // the key service authenticates no caller: loopback unless told otherwise
    expect(cfg.keyService.listen).to.equal('127.0.0.1:9000')
    expect(cfg.recoveryServer.listen).to.equal('0.0.0.0:9999')
    expect(cfg.kubeconfig).to.equal('/tmp/node/etc/kubernetes/admin.conf')
    expect((cfg.metadata as StaticMetadata | undefined)?.peers).to.deep.equal([])
  })

  it('takes the key service and swtpm on unix sockets (unix:/path), which only their owner can use', () => {
    const cfg = parseNodeConfig(
      full.replace('swtpm: 127.0.0.1:2321', 'swtpm: unix:/run/swtpm/swtpm.sock') +
        'keyService:\n  listen: unix:/run/constellation/keyservice.sock\n',
      'node.yaml',
    )
    expect(cfg.tpm.swtpm).to.equal('unix:/run/swtpm/swtpm.sock')
    expect(cfg.keyService.listen).to.equal('unix:/run/constellation/keyservice.sock')
  })

  const cases: Record<
    string,
    { text: string; require?: Array<'initSecretHash' | 'stateDisk' | 'metadata'>; want: string[] }
  > = {
    'an unknown key, with its line': { text: full + 'colour: blue\n', want: ['15: colour: unknown key'] },
    'two TPMs at once': {
      text: full.replace('  swtpm: 127.0.0.1:2321', '  swtpm: 127.0.0.1:2321\n  device: /dev/tpmrm0'),
      want: ['2: tpm: must NOT have more than 1 properties'],
    },
    'a bad listen address': {
      text: full.replace('127.0.0.1:9000', 'localhost'),
      want: ['6: initServer.listen: "localhost" is not HOST:PORT'],
    },
    'a bad join service address': {
      text: full + 'joinService:\n  listen: 30090\n',
      want: ['16: joinService.listen: must be string'],
    },
    "a key the node derives itself (the initial key is state-disk setup's, not the operator's)": {
      text: full.replace(
        '  device: /tmp/node/state.img',
        '  device: /tmp/node/state.img\n  initialKeyFile: /k',
      ),
      want: ['10: stateDisk.initialKeyFile: unknown key'],
    },
    'a bad recovery server address': {
      text: full + 'recoveryServer:\n  listen: "*:9999"\n',
      want: ['16: recoveryServer.listen: "*:9999" is not HOST:PORT'],
    },
    'a bad key service address': {
      text: full + 'keyService:\n  listen: "[::1]"\n',
      want: ['16: keyService.listen: "[::1]" is not HOST:PORT'],
    },
    'a key service socket with a relative path': {
      text: full + 'keyService:\n  listen: unix:run/keyservice.sock\n',
      want: ['16: keyService.listen: "unix:run/keyservice.sock" is not unix:/absolute/path'],
    },
    'a swtpm socket path longer than a unix socket address holds (107 bytes)': {
      text: full.replace('swtpm: 127.0.0.1:2321', `swtpm: unix:/${'s'.repeat(107)}`),
      want: ['3: tpm.swtpm: a unix socket path holds at most 107 bytes, this one has 108'],
    },
    'a unix socket for a service other nodes dial': {
      text: full.replace('listen: 127.0.0.1:9000', 'listen: unix:/run/init.sock'),
      want: ['6: initServer.listen: "unix:/run/init.sock" is not HOST:PORT'],
    },
    'a relative kubeconfig path': {
      text: full + 'kubeconfig: admin.conf\n',
      want: ['15: kubeconfig: must match pattern "^/"'],
    },
    'a malformed bcrypt hash': {
      text: full.replace(/initSecretHash: .*/, 'initSecretHash: plaintext'),
      want: ['7: initSecretHash: must match pattern'],
    },
    'a bad role': {
      text: full.replace('role: control-plane', 'role: master'),
      want: ['13: metadata.self.role: must be one of "control-plane", "worker"'],
    },
    'a bad vpcIP': {
      text: full.replace('vpcIP: 10.0.0.2', 'vpcIP: ten'),
      want: ['13: metadata.self.vpcIP: "ten" is not an IP address'],
    },
    'http metadata without its url': {
      text: full.replace(/metadata:[\s\S]*$/, 'metadata:\n  provider: http\n'),
      want: ['12: metadata.url: required with provider http'],
    },
    'http metadata with a url that is not http(s)://HOST[:PORT]': {
      text: full.replace(/metadata:[\s\S]*$/, 'metadata:\n  provider: http\n  url: ftp://10.42.0.1/x\n'),
      want: ['13: metadata.url: "ftp://10.42.0.1/x" is not http(s)://HOST[:PORT]'],
    },
    'http metadata that also states this node: the service says who it is': {
      text: full.replace('provider: static', 'provider: http\n  url: http://10.42.0.1:8080'),
      want: [
        '14: metadata.self: comes from the metadata service with provider http; remove it',
        '15: metadata.loadBalancerEndpoint: comes from the metadata service with provider http; remove it',
      ],
    },
    'static metadata without self': {
      text: full.replace(/ {2}self: .*\n/, ''),
      want: ['12: metadata.self: required with provider static'],
    },
    'a key the command requires': {
      text: 'attestationVariant: qemu-vtpm\ntpm: { device: /dev/tpmrm0 }\n',
      require: ['initSecretHash'],
      want: ['1: initSecretHash: required key is missing'],
    },
  }
  for (const [name, tc] of Object.entries(cases)) {
    it(name, () => {
      const got = problems(tc.text, tc.require)
      expect(got, got.join('\n')).to.have.length(tc.want.length)
      tc.want.forEach((w, i) => expect(got[i]).to.contain(w))
    })
  }

  it('with http metadata, bootstrap run may take the init secret hash from the service', () => {
    const http = full
      .replace(/initSecretHash: .*\n/, '')
      .replace(/metadata:[\s\S]*$/, 'metadata:\n  provider: http\n  url: http://10.42.0.1:8080\n')
    expect(parseBootstrapperNodeConfig(http, 'node.yaml').metadata).to.deep.equal({
      provider: 'http',
      url: 'http://10.42.0.1:8080',
    })
    expect(() => parseBootstrapperNodeConfig(full.replace(/initSecretHash: .*\n/, ''), 'node.yaml')).to.throw(
      /initSecretHash: required key is missing/,
    )
  })

  it("bootstrap run's rules (the ones every written node config must pass) require the init secret hash, the state disk and the metadata", () => {
    expect(() => parseBootstrapperNodeConfig(full, 'node.yaml')).not.to.throw()
    const bare = 'attestationVariant: qemu-vtpm\ntpm: { device: /dev/tpmrm0 }\n'
    expect(() => parseNodeConfig(bare, 'node.yaml')).not.to.throw() // verifyservice needs no more
    expect(() => parseBootstrapperNodeConfig(bare, 'node.yaml')).to.throw(
      /initSecretHash: required key is missing[\s\S]*stateDisk: required key is missing[\s\S]*metadata: required key is missing/,
    )
  })
})

describe('node config: attestation.tpmEK for the join service', () => {
  let tmp: TempDir
  let rootFile: string
  beforeEach(async () => {
    tmp = await makeTempDir('constell-nodeconfig-tpmek-')
    rootFile = path.join(tmp.dir, 'vendor-root.pem')
    await writeFile(rootFile, testCertificate({ cn: 'Vendor TPM Root', ca: true }).pem)
  })
  afterEach(() => tmp.cleanup())

  const withRoots = (variant: string, roots: string[]) =>
    `attestationVariant: ${variant}\ntpm: { device: /dev/tpmrm0 }\nattestation:\n  tpmEK:\n    roots:\n${roots.map((r) => `      - ${r}\n`).join('')}`

  it('reads the roots files for tpm-ek; other configs carry no attestation key', () => {
    const cfg = parseNodeConfig(withRoots('tpm-ek', [rootFile]), 'node.yaml')
    expect(cfg.attestation?.tpmEK?.roots).to.deep.equal([rootFile])
    expect(nodeValidatorOptions(cfg).roots?.map((c) => c.subject)).to.deep.equal(['CN=Vendor TPM Root'])
    expect(parseNodeConfig(full, 'node.yaml')).not.to.have.property('attestation')
    expect(nodeValidatorOptions(parseNodeConfig(full, 'node.yaml'))).to.deep.equal({})
  })

  it('names each bad root, and roots that do not belong to the variant', async () => {
    const leaf = path.join(tmp.dir, 'ek.pem')
    await writeFile(leaf, testCertificate({ cn: 'EK', ca: false }).pem)
    const missing = path.join(tmp.dir, 'missing.pem')
    expect(problems(withRoots('tpm-ek', [rootFile, missing, leaf, 'relative.pem']))).to.deep.equal([
      '9: attestation.tpmEK.roots.3: must match pattern "^/"',
      `7: attestation.tpmEK.roots.1: reading ${missing}: ENOENT: no such file or directory, stat '${missing}'; give PEM text (-----BEGIN CERTIFICATE-----) or the path of a PEM or DER certificate file`,
      "8: attestation.tpmEK.roots.2: CN=EK is not a CA certificate (basicConstraints CA:TRUE); list the manufacturer's root or intermediate CA certificates",
    ])
    expect(problems(withRoots('qemu-vtpm', [rootFile]))).to.deep.equal([
      '4: attestation.tpmEK: is used only with attestationVariant tpm-ek; remove it',
    ])
    expect(problems(withRoots('tpm-ek', []).replace('roots:\n', 'roots: []\n'))).to.deep.equal([
      '5: attestation.tpmEK.roots: must NOT have fewer than 1 items',
    ])
  })

  it('a tpm-ek join service without roots cannot start', () => {
    const cfg = parseNodeConfig('attestationVariant: tpm-ek\ntpm: { device: /dev/tpmrm0 }\n', 'node.yaml')
    expect(() => nodeValidatorOptions(cfg)).to.throw(CliError, 'needs attestation.tpmEK.roots')
  })
})
