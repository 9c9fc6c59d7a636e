/** Shared pieces of the SEV-SNP tests: the recorded evidence, AMD's roots, a policy a report meets. */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { X509Certificate } from 'node:crypto'
import { REPO_ROOT } from '../../support/cli.js'
import { parseSnpReport, type SnpEvidence, type SnpPolicy } from '../../../src/lib/attestation/snp/index.js'
import { AMD_ROOT_KEYS } from '../../../src/lib/attestation/vendor-roots.js'

export const SNP_FIXTURES = path.join(REPO_ROOT, 'test/fixtures/cvm/snp')
export const fixture = (name: string): Buffer => readFileSync(path.join(SNP_FIXTURES, name))

/** Every certificate of a PEM bundle, each as its own PEM. */
export const pems = (bundle: Buffer): Buffer[] =>
  (bundle.toString().match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? []).map((p) =>
    Buffer.from(`${p}\n`),
  )
export const der = (pem: Buffer | string): Buffer => Buffer.from(new X509Certificate(pem).raw)

export const AMD_ARKS = Object.values(AMD_ROOT_KEYS).map((pem) => new X509Certificate(pem))
export const MILAN_ARK = new X509Certificate(AMD_ROOT_KEYS.Milan)

export interface RecordedCase {
  name: string
  evidence: SnpEvidence
  /** A time inside every certificate's validity. */
  now: Date
  signer: 'VCEK' | 'VLEK'
}

/**
 * The recorded reports whose signatures verify (see the fixtures' README): Azure's VCEK-signed
 * report (a bare report in the first 1184 bytes of attestation.bin) and AWS's VLEK-signed one.
 */
export function recordedCases(): RecordedCase[] {
  return [
    {
      name: 'Azure, VCEK-signed (Constellation snp/testdata)',
      evidence: {
        report: fixture('attestation.bin').subarray(0, 1184),
        signer: fixture('vcek.pem'),
        chain: pems(fixture('certchain.pem')),
      },
      now: new Date('2024-06-01T00:00:00Z'),
      signer: 'VCEK',
    },
    {
      name: 'Azure, VCEK as DER from AMD KDS',
      evidence: {
        report: fixture('attestation.bin').subarray(0, 1184),
        signer: fixture('vcek.cert'),
        chain: pems(fixture('certchain.pem')).map(der),
      },
      now: new Date('2024-06-01T00:00:00Z'),
      signer: 'VCEK',
    },
    {
      name: 'AWS, VLEK-signed, version 3 (Constellation aws/snp/testdata)',
      evidence: {
        report: Buffer.from(fixture('aws-report.txt').toString(), 'base64'),
        signer: fixture('aws-vlek.pem'),
        chain: pems(fixture('aws-certchain.pem')),
      },
      now: new Date('2025-06-01T00:00:00Z'),
      signer: 'VLEK',
    },
  ]
}

/** A policy the report meets exactly: its own TCB as the minimum, its own measurement and data. */
export function policyFor(report: Buffer, now: Date, arks: readonly X509Certificate[] = AMD_ARKS): SnpPolicy {
  const r = parseSnpReport(report)
  const { bootloader, tee, snp, microcode } = r.reportedTcb
  return {
    arks,
    minimumTcb: { bootloader, tee, snp, microcode },
    launchMeasurement: r.measurement,
    reportData: r.reportData,
    allowMigrationAgent: false,
    allowSmt: r.policyBits.smt,
    now: () => now,
  }
}

/** The error fn throws; fails the test if it returns. */
export function refusal(fn: () => unknown): Error {
  try {
    fn()
  } catch (err) {
    if (err instanceof Error) return err
    throw new Error(`threw a non-Error: ${String(err)}`, { cause: err })
  }
  throw new Error('expected a refusal, but it was accepted')
}

/** A copy of buf with one byte XOR-ed. */
export function flip(buf: Buffer, offset: number, mask = 0x01): Buffer {
  const out = Buffer.from(buf)
  out[offset] = (out[offset] ?? 0) ^ mask
  return out
}
