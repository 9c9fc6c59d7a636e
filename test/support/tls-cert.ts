/** A self-signed server certificate for localhost and 127.0.0.1 (test servers that speak HTTPS): the API fake's, one per process. */
import { servingCert } from '../../src/lib/simulator/serving-cert.js'

export const localhostCert = (): { certPem: string; keyPem: string } => servingCert()
