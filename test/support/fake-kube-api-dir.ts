/**
 * FakeKubeApiDir — a TEST DOUBLE for the Kubernetes API objects `kubeadm join` reads, kept as files
 * in a directory that the kubeadm contract fake reads through KUBEADM_FAKE_API_DIR, laid out as
 * simulator/api-layout.js says. Its registrar is where a test's join service registers bootstrap
 * tokens, as the production one creates their Secrets through the API.
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { objectFile, resourceDir } from '../../simulator/api-layout.js'
import { isErrnoException } from '../../src/lib/errors/index.js'
import { type SecretObject } from '../../src/lib/kube/index.js'
import { TokenIdTakenError, type TokenRegistrar } from '../../src/lib/kube/bootstrap-token.js'
import { stringifyYaml } from '../../src/lib/yaml/index.js'

/** Where bootstrap token Secrets live. */
const TOKEN_SECRETS = { resource: 'secrets', namespace: 'kube-system' }

export class FakeKubeApiDir {
  constructor(readonly dir: string) {}

  /** Creates a token's Secret; a taken name is the API's 409. */
  readonly registrar: TokenRegistrar = {
    register: async (secret: SecretObject) => {
      const file = objectFile(this.dir, { ...TOKEN_SECRETS, name: secret.metadata.name })
      await mkdir(path.dirname(file), { recursive: true })
      try {
        await writeFile(file, JSON.stringify(storedSecret(secret)), { flag: 'wx', mode: 0o600 })
      } catch (err) {
        if (isErrnoException(err, 'EEXIST'))
          throw new TokenIdTakenError(secret.metadata.name.replace(/^bootstrap-token-/, ''))
        throw err
      }
    },
  }

  /** kube-public/cluster-info as kubeadm init publishes it: the CA and the API server's address. */
  async publishClusterInfo(caCertPem: string, server: string): Promise<void> {
    const kubeconfig = stringifyYaml({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: '',
          cluster: {
            'certificate-authority-data': Buffer.from(caCertPem).toString('base64'),
            server: `https://${server}`,
          },
        },
      ],
    })
    const file = objectFile(this.dir, {
      resource: 'configmaps',
      namespace: 'kube-public',
      name: 'cluster-info',
    })
    await mkdir(path.dirname(file), { recursive: true })
    await writeFile(
      file,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'cluster-info', namespace: 'kube-public' },
        data: { kubeconfig },
      }),
    )
  }

  /** Token IDs with a Secret. */
  async tokenIds(): Promise<string[]> {
    const names = await readdir(resourceDir(this.dir, TOKEN_SECRETS)).catch(() => [])
    return names.map((n) => n.replace(/^bootstrap-token-(.*)\.json$/, '$1')).sort()
  }

  /** The Nodes that joined, with their labels. */
  async nodes(): Promise<Array<{ name: string; labels: Record<string, string> }>> {
    const nodes = resourceDir(this.dir, { resource: 'nodes' })
    const names = await readdir(nodes).catch(() => [])
    return Promise.all(
      names.sort().map(async (n) => {
        const node = JSON.parse(await readFile(path.join(nodes, n), 'utf8')) as {
          metadata: { name: string; labels: Record<string, string> }
        }
        return { name: node.metadata.name, labels: node.metadata.labels }
      }),
    )
  }

  /** A token's Secret changed in place (expired, another secret), as a test needs it. */
  async editToken(id: string, data: Record<string, string>): Promise<void> {
    const file = objectFile(this.dir, { ...TOKEN_SECRETS, name: `bootstrap-token-${id}` })
    const secret = JSON.parse(await readFile(file, 'utf8')) as StoredSecret
    for (const [k, v] of Object.entries(data)) secret.data[k] = Buffer.from(v).toString('base64')
    await writeFile(file, JSON.stringify(secret))
  }
}

type StoredSecret = Omit<SecretObject, 'stringData'> & { data: Record<string, string> }

/** As the API server stores a Secret: stringData is write-only, merged into base64 `data`. */
function storedSecret({ stringData, ...rest }: SecretObject): StoredSecret {
  return {
    ...rest,
    data: Object.fromEntries(
      Object.entries(stringData).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
    ),
  }
}
