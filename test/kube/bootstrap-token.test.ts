import { createHash, randomBytes } from 'node:crypto'
import { expect } from '../support/chai.js'
import { BOOTSTRAP_TOKEN_PATTERN } from '../../src/lib/contract/index.js'
import {
  bootstrapTokenSecret,
  createTokenIssuer,
  generateBootstrapToken,
  tokenString,
  type SecretObject,
} from '../../src/lib/kube/index.js'
import {
  BOOTSTRAP_TOKEN_TTL_MS,
  TokenIdTakenError,
  type TokenRegistrar,
} from '../../src/lib/kube/bootstrap-token.js'

const NOW = new Date('2026-03-01T12:00:00.250Z')
const fresh = () => generateBootstrapToken(randomBytes, NOW, BOOTSTRAP_TOKEN_TTL_MS)

/** Records every Secret; refuses the first `taken` of them as a name that exists. */
class FakeRegistrar implements TokenRegistrar {
  readonly registered: SecretObject[] = []
  constructor(
    private taken = 0,
    private readonly failWith?: Error,
  ) {}
  async register(secret: SecretObject): Promise<void> {
    if (this.failWith) throw this.failWith
    if (this.taken-- > 0) throw new TokenIdTakenError(secret.stringData['token-id'] ?? '')
    this.registered.push(secret)
  }
}

describe('bootstrap tokens', () => {
  it("are kubeadm's [a-z0-9]{6}.[a-z0-9]{16}, distinct, and expire after 15 minutes", () => {
    const tokens = Array.from({ length: 500 }, fresh)
    for (const t of tokens) {
      expect(tokenString(t)).to.match(BOOTSTRAP_TOKEN_PATTERN)
      expect(t.expires.getTime() - NOW.getTime()).to.equal(15 * 60_000)
    }
    expect(new Set(tokens.map(tokenString)).size).to.equal(500)
    expect(BOOTSTRAP_TOKEN_TTL_MS).to.equal(900_000)
  })

  it('use every character of the alphabet (no fixed or biased positions)', () => {
    const seen = new Set(Array.from({ length: 200 }, () => tokenString(fresh())).join(''))
    seen.delete('.')
    expect(seen.size).to.equal(36)
  })

  it('become the Secret kubeadm creates for a node-join token', () => {
    const token = { id: 'abcdef', secret: '0123456789abcdef', expires: new Date('2026-03-01T12:15:00.250Z') }
    const secret = bootstrapTokenSecret(token, 'issued by a test')
    expect(secret).to.deep.equal({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'bootstrap-token-abcdef', namespace: 'kube-system' },
      type: 'bootstrap.kubernetes.io/token',
      stringData: {
        'token-id': 'abcdef',
        'token-secret': '0123456789abcdef',
        description: 'issued by a test',
        // Go's RFC3339 in UTC, as kubeadm writes it: whole seconds, Z
        expiration: '2026-03-01T12:15:00Z',
        'usage-bootstrap-signing': 'true',
        'usage-bootstrap-authentication': 'true',
        'auth-extra-groups': 'system:bootstrappers:kubeadm:default-node-token',
      },
    })
  })

  it('issued for a node, carry its name: a label with its digest (what `node remove` deletes by) and the description', () => {
    const token = { id: 'abcdef', secret: '0123456789abcdef', expires: new Date('2026-03-01T12:15:00Z') }
    const secret = bootstrapTokenSecret(token, 'issued by a test', 'worker-1')
    expect(secret.metadata.labels).to.deep.equal({
      'constellation.io/bootstrap-token-node': createHash('sha256')
        .update('worker-1')
        .digest('hex')
        .slice(0, 63),
    })
    expect(secret.stringData.description).to.equal('issued by a test for node "worker-1"')
  })

  it('are a pure function of the random source (what keeps golden files stable)', () => {
    const seeded = () => {
      let n = 0
      return (size: number) => Buffer.from(Array.from({ length: size }, () => (n = (n * 31 + 7) % 251)))
    }
    expect(generateBootstrapToken(seeded(), NOW, 1)).to.deep.equal(generateBootstrapToken(seeded(), NOW, 1))
  })

  it('never use biased bytes: a source of only high bytes is skipped until usable ones come', () => {
    let calls = 0
    const token = generateBootstrapToken(
      (n) => (calls++ === 0 ? Buffer.alloc(n, 255) : Buffer.alloc(n, 1)),
      NOW,
      1,
    )
    expect(tokenString(token)).to.equal('bbbbbb.bbbbbbbbbbbbbbbb')
  })

  describe('the issuer', () => {
    const cases: Record<
      string,
      { taken: number; failWith?: Error; wantErr?: RegExp; wantRegistered: number }
    > = {
      'registers one token and returns it': { taken: 0, wantRegistered: 1 },
      'tries a fresh token when the ID is taken': { taken: 2, wantRegistered: 1 },
      'gives up after three taken IDs': {
        taken: 3,
        wantErr: /registering bootstrap token/,
        wantRegistered: 0,
      },
      'says which token failed to register': {
        taken: 0,
        failWith: new Error('API server unreachable'),
        wantErr: /registering bootstrap token [a-z0-9]{6}$/,
        wantRegistered: 0,
      },
    }
    for (const [name, tc] of Object.entries(cases))
      it(name, async () => {
        const registrar = new FakeRegistrar(tc.taken, tc.failWith)
        const issuing = createTokenIssuer(registrar, () => NOW).issue()
        if (tc.wantErr) {
          const err = await issuing.then(
            () => expect.fail('issued'),
            (e: unknown) => e as Error,
          )
          expect(err.message).to.match(tc.wantErr)
          expect(err.message, 'the secret half never appears').not.to.match(/\.[a-z0-9]{16}/)
        } else {
          const token = await issuing
          expect(token).to.match(BOOTSTRAP_TOKEN_PATTERN)
          const data = registrar.registered[0]?.stringData ?? {}
          expect(`${data['token-id']}.${data['token-secret']}`).to.equal(token)
          expect(data.expiration).to.equal('2026-03-01T12:15:00Z')
        }
        expect(registrar.registered).to.have.length(tc.wantRegistered)
      })
  })
})
