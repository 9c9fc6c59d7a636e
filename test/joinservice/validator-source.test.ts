import { expect } from '../support/chai.js'
import type { Measurements, Validator } from '../../src/lib/attestation/index.js'
import { handshakeValidator, validatorSourceFrom } from '../../src/lib/joinservice/validator-source.js'
import { createAuditLog } from '../../src/lib/joinservice/audit.js'
import { createLogger } from '../../src/lib/system/index.js'

const set = (byte: number): Measurements =>
  new Map([[4, { expected: Buffer.alloc(32, byte), warnOnly: false }]])

/** A validator that says which measurement set it was built for. */
const stubValidator = (m: Measurements): Validator => ({
  variant: 'qemu-vtpm',
  oid: '1.3.9900.5.1',
  validate: async () => ({
    userData: m.get(4)?.expected ?? Buffer.alloc(0),
    pcrs: new Map(),
    warnings: [],
    akName: Buffer.alloc(34),
  }),
})

describe('validator source', () => {
  it('builds one validator per measurement set and follows the set in force', async () => {
    let current = set(1)
    let builds = 0
    const source = validatorSourceFrom({ current: () => current }, (m) => (builds++, stubValidator(m)))
    const listenerValidator = handshakeValidator(source)
    const seen = async () => (await listenerValidator.validate(Buffer.alloc(0), Buffer.alloc(32))).userData[0]
    expect(await seen()).to.equal(1)
    expect(await seen()).to.equal(1)
    expect(builds, 'same set, same validator').to.equal(1)
    current = set(2)
    expect(await seen(), 'the next handshake uses the new set').to.equal(2)
    expect(builds).to.equal(2)
    expect(listenerValidator.oid).to.equal('1.3.9900.5.1')
  })
})

describe('audit log', () => {
  it('writes one JSON line per record under the audit component', () => {
    const lines: string[] = []
    const audit = createAuditLog(
      createLogger({ format: 'json', write: (l) => lines.push(l), component: 'joinservice' }),
    )
    audit({
      rpc: 'IssueJoinTicket',
      node: 'worker-1',
      role: 'worker',
      peer: '10.0.0.5:4711',
      verdict: 'refused',
      reason: 'IP SAN',
    })
    expect(lines).to.have.length(1)
    expect(JSON.parse(lines[0] ?? '')).to.include({
      level: 'info',
      msg: 'Join request',
      component: 'joinservice.audit',
      rpc: 'IssueJoinTicket',
      node: 'worker-1',
      role: 'worker',
      peer: '10.0.0.5:4711',
      verdict: 'refused',
      reason: 'IP SAN',
    })
  })
})
