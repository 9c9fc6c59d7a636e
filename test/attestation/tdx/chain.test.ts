/**
 * The walk from a PCK (or TCB signing) certificate up to a pinned Intel root, on small chains made
 * here: which certificate the walk refuses, and why (not yet valid, expired, not a CA, no pinned
 * root), each with the message that names it.
 */
import { X509Certificate, type KeyObject } from 'node:crypto'
import { expect } from '../../support/chai.js'
import { verifyToPinnedRoot } from '../../../src/lib/attestation/tdx/chain.js'
import { INTEL_SGX_ROOT_CA } from '../../../src/lib/attestation/vendor-roots.js'
import {
  caBasicConstraints,
  distinguishedName,
  generateEcdsaP256KeyPair,
  randomSerialNumber,
  signCertificate,
  toPem,
} from '../../../src/lib/x509/index.js'

const DAY = 24 * 3600 * 1000
const NOW = new Date('2030-01-01T00:00:00Z')

interface Made {
  cert: X509Certificate
  key: KeyObject
  name: ReturnType<typeof distinguishedName>
}

async function make(
  cn: string,
  issuer: Made | undefined,
  opts: {
    ca?: boolean
    from?: Date
    to?: Date
    key?: KeyObject
    publicKey?: KeyObject
    name?: ReturnType<typeof distinguishedName>
  } = {},
): Promise<Made> {
  const { ca = true, from = new Date(NOW.getTime() - DAY), to = new Date(NOW.getTime() + DAY) } = opts
  const { privateKey, publicKey } =
    opts.key && opts.publicKey
      ? { privateKey: opts.key, publicKey: opts.publicKey }
      : await generateEcdsaP256KeyPair()
  const name = opts.name ?? distinguishedName([['CN', cn]])
  const der = signCertificate(
    {
      serialNumber: randomSerialNumber(),
      subject: name,
      issuer: issuer?.name ?? name,
      notBefore: from,
      notAfter: to,
      publicKey,
      extensions: ca ? [caBasicConstraints()] : [],
    },
    issuer?.key ?? privateKey,
  )
  return { cert: new X509Certificate(toPem(der)), key: privateKey, name }
}

function refusal(fn: () => unknown): string {
  try {
    fn()
  } catch (err) {
    expect((err as Error).name).to.equal('AttestationError')
    return (err as Error).message
  }
  throw new Error('expected a refusal, but it was accepted')
}

describe('TDX certificate chains up to a pinned root', function () {
  this.timeout(20_000)
  let root: Made
  let ca: Made
  let leaf: Made
  before(async () => {
    root = await make('Root', undefined)
    ca = await make('Platform CA', root)
    leaf = await make('PCK', ca, { ca: false })
  })
  const walk = (chain: X509Certificate[], roots: X509Certificate[], now = NOW) =>
    verifyToPinnedRoot(chain, roots, now, 'PCK certificate chain')

  it('walks leaf → intermediate → pinned root, whatever the order of the chain, and names the root', () => {
    const v = walk([leaf.cert, root.cert, ca.cert], [root.cert])
    expect(v.leaf).to.equal(leaf.cert)
    expect(v.root).to.equal(root.cert)
    expect(v.rootIsIntels).to.equal(false)
  })

  it('no pinned root, an empty chain: refused, naming which', () => {
    expect(refusal(() => walk([leaf.cert], []))).to.equal(
      'PCK certificate chain: no Intel root certificate is pinned',
    )
    expect(refusal(() => walk([], [root.cert]))).to.equal('PCK certificate chain: is empty')
  })

  it('a chain that reaches no pinned root: names where it ends and the roots it tried', async () => {
    const other = await make('Other Root', undefined)
    expect(refusal(() => walk([leaf.cert, ca.cert], [other.cert, leaf.cert]))).to.equal(
      'PCK certificate chain: CN=Platform CA, issued by CN=Root, chains to none of the 2 pinned roots (CN=Other Root; CN=PCK)',
    )
    // the root's key under another name did not issue the CA: names and signature must both match
    const renamed = await make('Renamed Root', undefined, { key: root.key, publicKey: root.cert.publicKey })
    expect(refusal(() => walk([leaf.cert, ca.cert], [renamed.cert]))).to.match(
      /chains to none of the 1 pinned roots/,
    )
  })

  it('a leaf, intermediate or pinned root outside its validity: refused, naming it and the date', async () => {
    const early = await make('Early PCK', ca, { ca: false, from: new Date(NOW.getTime() + 1000) })
    expect(refusal(() => walk([early.cert, ca.cert], [root.cert]))).to.equal(
      `PCK certificate chain: CN=Early PCK is not valid before ${new Date(NOW.getTime() + 1000).toISOString()}`,
    )
    const late = await make('Late PCK', ca, { ca: false, to: new Date(NOW.getTime() - 1000) })
    expect(refusal(() => walk([late.cert, ca.cert], [root.cert]))).to.equal(
      `PCK certificate chain: CN=Late PCK expired on ${new Date(NOW.getTime() - 1000).toISOString()}`,
    )
    // the bounds themselves are inside (to the second, as X.509 stores them)
    expect(walk([leaf.cert, ca.cert], [root.cert], new Date(NOW.getTime() - DAY)).leaf).to.equal(leaf.cert)
    expect(walk([leaf.cert, ca.cert], [root.cert], new Date(NOW.getTime() + DAY)).leaf).to.equal(leaf.cert)
    const oldRoot = await make('Old Root', undefined, { to: new Date(NOW.getTime() - 1000) })
    const underOld = await make('PCK under old root', oldRoot, { ca: false })
    expect(refusal(() => walk([underOld.cert], [oldRoot.cert]))).to.match(
      /^PCK certificate chain \(pinned root\): CN=Old Root expired on /,
    )
    const oldCa = await make('Old CA', root, { to: new Date(NOW.getTime() - 1000) })
    const underOldCa = await make('PCK under old CA', oldCa, { ca: false })
    expect(refusal(() => walk([underOldCa.cert, oldCa.cert], [root.cert]))).to.match(
      /^PCK certificate chain: CN=Old CA expired on /,
    )
  })

  it('an intermediate or pinned root that is not a CA certificate: refused, naming it', async () => {
    const notCa = await make('Not a CA', root, { ca: false })
    const under = await make('PCK under a non-CA', notCa, { ca: false })
    expect(refusal(() => walk([under.cert, notCa.cert], [root.cert]))).to.equal(
      'PCK certificate chain: CN=Not a CA signed CN=PCK under a non-CA but is not a CA certificate',
    )
    expect(refusal(() => walk([under.cert], [notCa.cert]))).to.equal(
      'PCK certificate chain: pinned root CN=Not a CA is not a CA certificate',
    )
  })

  it('a self-signed leaf is not its own issuer: it reaches no pinned root', async () => {
    const self = await make('Self', undefined, { ca: false })
    expect(self.cert.checkIssued(self.cert), 'self-signed').to.equal(true)
    expect(refusal(() => walk([self.cert, ca.cert], [root.cert]))).to.equal(
      'PCK certificate chain: CN=Self, issued by CN=Self, chains to none of the 1 pinned roots (CN=Root)',
    )
  })

  it('unreadable validity dates (year 1, year 10000): refused as such, naming the certificate', async () => {
    const ancient = await make('Ancient PCK', ca, { ca: false, from: new Date('0001-01-01T00:00:00Z') })
    expect(ancient.cert.validFrom).to.equal('Bad time value')
    expect(refusal(() => walk([ancient.cert, ca.cert], [root.cert]))).to.equal(
      'PCK certificate chain: CN=Ancient PCK has unreadable validity dates',
    )
    const endless = await make('Endless PCK', ca, { ca: false, to: new Date('+010000-01-01T00:00:00Z') })
    expect(endless.cert.validTo).to.equal('Bad time value')
    expect(refusal(() => walk([endless.cert, ca.cert], [root.cert]))).to.equal(
      'PCK certificate chain: CN=Endless PCK has unreadable validity dates',
    )
  })

  it('names of several parts on one line; an empty name as such', async () => {
    const parts = await make('', ca, {
      ca: false,
      name: distinguishedName([
        ['O', 'Example'],
        ['CN', 'Two Part PCK'],
      ]),
      to: new Date(NOW.getTime() - 1000),
    })
    expect(refusal(() => walk([parts.cert, ca.cert], [root.cert]))).to.equal(
      `PCK certificate chain: O=Example, CN=Two Part PCK expired on ${new Date(NOW.getTime() - 1000).toISOString()}`,
    )
    const empty = await make('', ca, { ca: false, name: distinguishedName([]) })
    expect(empty.cert.subject, "node's subject of an empty name").to.equal(undefined)
    const other = await make('Other Root', undefined)
    expect(refusal(() => walk([empty.cert, ca.cert], [other.cert]))).to.equal(
      'PCK certificate chain: CN=Platform CA, issued by CN=Root, chains to none of the 1 pinned roots (CN=Other Root)',
    )
    expect(refusal(() => walk([empty.cert], [other.cert]))).to.equal(
      'PCK certificate chain: (empty name), issued by CN=Platform CA, chains to none of the 1 pinned roots (CN=Other Root)',
    )
  })

  it('a root whose key cannot be read verifies nothing', () => {
    const unreadable = new X509Certificate(root.cert.raw)
    Object.defineProperty(unreadable, 'publicKey', {
      get() {
        throw new Error('unsupported key')
      },
    })
    expect(ca.cert.checkIssued(unreadable), 'named as the issuer').to.equal(true)
    expect(refusal(() => walk([leaf.cert, ca.cert], [unreadable]))).to.equal(
      'PCK certificate chain: CN=Platform CA, issued by CN=Root, chains to none of the 1 pinned roots (CN=Root)',
    )
  })

  it("a chain ending in Intel's own root says so", () => {
    // Intel's root verifies no certificate made here: only the flag's source is checked
    const intel = new X509Certificate(INTEL_SGX_ROOT_CA)
    expect(refusal(() => walk([leaf.cert, ca.cert], [intel]))).to.match(
      /chains to none of the 1 pinned roots \(CN=Intel SGX Root CA/,
    )
  })
})
