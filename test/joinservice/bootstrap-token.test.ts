import { expect } from '../support/chai.js'
import {
  BOOTSTRAP_TOKEN_PATTERN,
  BOOTSTRAP_TOKEN_TTL_MS,
  bootstrapTokenSecret,
  createTokenIssuer,
  generateBootstrapToken,
  rfc3339,
  TokenIdTakenError,
  tokenString,
  type BootstrapTokenSecret,
  type TokenRegistrar,
} from '../../src/lib/joinservice/bootstrap-token.js'

const NOW = new Date('2026-03-01T12:00:00.250Z')
const decode = (data: Record<string, string>) =>
  Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]))

/** Records every Secret; refuses the first `taken` of them as a name that exists. */
class FakeRegistrar implements TokenRegistrar {
  readonly registered: BootstrapTokenSecret[] = []
  constructor(
    private taken = 0,
    private readonly failWith?: Error,
  ) {}
  async register(secret: BootstrapTokenSecret): Promise<void> {
    if (this.failWith) throw this.failWith
    if (this.taken-- > 0) throw new TokenIdTakenError(decode(secret.data)['token-id'] ?? '')
    this.registered.push(secret)
  }
}

describe('bootstrap tokens', () => {
  it("are kubeadm's [a-z0-9]{6}.[a-z0-9]{16}, distinct, and expire after 15 minutes", () => {
    const tokens = Array.from({ length: 500 }, () => generateBootstrapToken(NOW))
    for (const t of tokens) {
      expect(tokenString(t)).to.match(BOOTSTRAP_TOKEN_PATTERN)
      expect(t.expires.getTime() - NOW.getTime()).to.equal(15 * 60_000)
    }
    expect(new Set(tokens.map(tokenString)).size).to.equal(500)
    expect(BOOTSTRAP_TOKEN_TTL_MS).to.equal(900_000)
  })

  it('use every character of the alphabet (no fixed or biased positions)', () => {
    const seen = new Set(Array.from({ length: 200 }, () => tokenString(generateBootstrapToken(NOW))).join(''))
    seen.delete('.')
    expect(seen.size).to.equal(36)
  })

  it('become the Secret kubeadm creates for a node-join token', () => {
    const token = { id: 'abcdef', secret: '0123456789abcdef', expires: new Date('2026-03-01T12:15:00.250Z') }
    const secret = bootstrapTokenSecret(token)
    expect({ ...secret, data: decode(secret.data) }).to.deep.equal({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'bootstrap-token-abcdef', namespace: 'kube-system' },
      type: 'bootstrap.kubernetes.io/token',
      data: {
        'token-id': 'abcdef',
        'token-secret': '0123456789abcdef',
        description: 'Bootstrap token issued by the constellation join service',
        expiration: '2026-03-01T12:15:00Z',
        'usage-bootstrap-signing': 'true',
        'usage-bootstrap-authentication': 'true',
        'auth-extra-groups': 'system:bootstrappers:kubeadm:default-node-token',
      },
    })
    // the API's JSON carries data as standard base64
    expect(secret.data['token-id']).to.equal('YWJjZGVm')
  })

  it("formats expiration as Go's RFC3339 in UTC (whole seconds, Z)", () => {
    expect(rfc3339(new Date('2026-12-31T23:59:59.999Z'))).to.equal('2026-12-31T23:59:59Z')
    expect(rfc3339(new Date(Date.UTC(2026, 0, 2, 3, 4, 5)))).to.equal('2026-01-02T03:04:05Z')
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
          const data = decode(registrar.registered[0]?.data ?? {})
          expect(`${data['token-id']}.${data['token-secret']}`).to.equal(token)
          expect(data.expiration).to.equal('2026-03-01T12:15:00Z')
        }
        expect(registrar.registered).to.have.length(tc.wantRegistered)
      })
  })
})
