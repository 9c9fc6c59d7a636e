/**
 * The joining node's check of its ticket's Kubernetes version: empty (a join service that does not
 * say) or vX.Y.Z, carried on to kubeadm join, which refuses another minor than the installed kubeadm's.
 */
import type { IssueJoinTicketResponse } from '../../../src/gen/join.js'
import { BadTicketError, checkJoinTicket } from '../../../src/lib/bootstrapper/join/join-ticket.js'
import {
  distinguishedName,
  generateEcdsaP256KeyPair,
  randomSerialNumber,
  signCertificate,
  toPem,
} from '../../../src/lib/x509/index.js'
import { expect } from '../../support/chai.js'

async function ticket(kubernetesVersion: string) {
  const keys = await generateEcdsaP256KeyPair()
  const name = distinguishedName([['CN', 'system:node:w-0']])
  const cert = toPem(
    signCertificate(
      {
        serialNumber: randomSerialNumber(),
        subject: name,
        issuer: name,
        notBefore: new Date(Date.now() - 60_000),
        notAfter: new Date(Date.now() + 86_400_000),
        publicKey: keys.publicKey,
        extensions: [],
      },
      keys.privateKey,
    ),
  )
  const res: IssueJoinTicketResponse = {
    stateDiskKey: Buffer.alloc(32, 1),
    measurementSalt: Buffer.alloc(32, 2),
    measurementSecret: Buffer.alloc(32, 3),
    kubeletCert: Buffer.from(cert),
    apiServerEndpoint: '10.0.0.1:6443',
    token: 'abcdef.0123456789abcdef',
    discoveryTokenCaCertHash: `sha256:${'ab'.repeat(32)}`,
    controlPlaneFiles: [],
    kubernetesVersion,
    kubernetesComponents: [],
    authorizedCaPublicKey: Buffer.alloc(0),
    hostCertificate: Buffer.alloc(0),
  }
  return { res, want: { controlPlane: false, kubeletKey: keys.publicKey } }
}

describe("join ticket: the cluster's Kubernetes version", () => {
  for (const version of ['v1.32.9', ''])
    it(`takes ${JSON.stringify(version)}`, async () => {
      const { res, want } = await ticket(version)
      expect(checkJoinTicket(res, want).kubernetesVersion).to.equal(version)
    })
  for (const version of ['1.32.9', 'v1.32', 'latest', 'v1.32.9\n'])
    it(`refuses ${JSON.stringify(version)}, naming the field`, async () => {
      const { res, want } = await ticket(version)
      expect(() => checkJoinTicket(res, want))
        .to.throw(BadTicketError)
        .with.property('message')
        .that.matches(/^join ticket unusable: kubernetes_version: .* is not vX\.Y\.Z$/)
    })
})
