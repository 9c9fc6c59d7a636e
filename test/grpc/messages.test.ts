import { expect } from '../support/chai.js'
import { withoutRpcInternals } from '../../src/lib/grpc/index.js'

describe('withoutRpcInternals', () => {
  const cases: Record<string, string> = {
    'rpc error: code = INTERNAL desc = running kubeadm init: exit status 1':
      'running kubeadm init: exit status 1',
    '14 UNAVAILABLE: connect ECONNREFUSED 127.0.0.1:9000': 'connect ECONNREFUSED 127.0.0.1:9000',
    'No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1. Resolution note: ':
      'connect ECONNREFUSED 127.0.0.1:1',
    '14 UNAVAILABLE: No connection established. Last error: Error: read ECONNRESET. Resolution note: x':
      'read ECONNRESET',
    'handshake failed: error:0A000086:SSL routines::certificate verify failed':
      'handshake failed: certificate verify failed',
    'the node said no': 'the node said no',
  }
  for (const [raw, shown] of Object.entries(cases))
    it(`${JSON.stringify(raw)} → ${JSON.stringify(shown)}`, () =>
      expect(withoutRpcInternals(raw)).to.equal(shown))
})
