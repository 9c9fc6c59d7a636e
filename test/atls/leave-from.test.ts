import * as grpc from '@grpc/grpc-js'
import { expect } from '../support/chai.js'
import { targetLeavingFrom } from '../../src/lib/atls/leave-from.js'
import { echo } from './echo-service.js'

describe('targetLeavingFrom: channel targets with a source address', () => {
  it('leaves a target as it is when no local address is given', () => {
    expect(targetLeavingFrom('10.0.0.2:30090', undefined)).to.equal('10.0.0.2:30090')
  })

  it('a target that is not HOST:PORT fails the call with UNAVAILABLE, naming it', async () => {
    const err = (await echo(
      targetLeavingFrom('no-port-here', '127.0.0.7'),
      grpc.credentials.createInsecure(),
    ).then(
      () => undefined,
      (e: unknown) => e,
    )) as grpc.ServiceError | undefined
    expect(err?.code).to.equal(grpc.status.UNAVAILABLE)
    expect(err?.details).to.include(
      'not HOST:PORT from a local address: constellation-from://127.0.0.7/no-port-here',
    )
  })
})
