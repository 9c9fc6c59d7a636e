import { Args, Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { checkEvidence, renderEvidenceCheck, type EvidenceCheck } from '../../lib/attestation/index.js'

export default class AttestationCheck extends BaseCommand {
  static override description =
    "Check one raw SEV-SNP report (1184 bytes, as the hardware returns it) or TDX quote (v4) offline: its signature and certificate chain against the vendor's published roots (AMD's ARKs, Intel's SGX root CA) or --root; debug is refused; TCB, policy and measurements are shown, not judged (exit 0 trusted, 4 refused, 2 unreadable)"
  static override examples = [
    '<%= config.bin %> attestation check report.bin --certs vcek.pem --certs ask-ark.pem',
    '<%= config.bin %> attestation check report.bin --certs vcek.pem --certs ask-ark.pem --report-data 0ccc0895ef2f2c3b…',
    '<%= config.bin %> attestation check quote.dat',
    '<%= config.bin %> attestation check quote.dat --collateral tdx-collateral/ --json',
  ]
  static override args = {
    file: Args.string({ description: 'the raw SEV-SNP report or TDX quote', required: true }),
  }
  static override flags = {
    certs: Flags.string({
      description:
        'SEV-SNP: a file with the VCEK or VLEK and/or its ASK/ASVK (PEM, several in one file, or DER); repeatable',
      multiple: true,
    }),
    root: Flags.string({
      description:
        "a root CA certificate file (PEM or DER) that replaces the vendor's published roots (the output says it is not the vendor's); repeatable",
      multiple: true,
    }),
    collateral: Flags.directory({
      description:
        "TDX: a directory with Intel's collateral (tcb-info.json, tcb-info-issuer-chain.pem, qe-identity.json, qe-identity-issuer-chain.pem) to evaluate the TCB status",
    }),
    'report-data': Flags.string({
      description:
        'the expected REPORT_DATA in hex (up to 64 bytes, zero padded); without it REPORT_DATA is not checked',
    }),
  }

  async run(): Promise<EvidenceCheck> {
    const { args, flags } = await this.parse(AttestationCheck)
    const { check, error } = checkEvidence({
      file: args.file,
      certs: flags.certs,
      roots: flags.root,
      collateralDir: flags.collateral,
      reportData: flags['report-data'],
      cwd: process.cwd(),
    })
    if (!this.jsonEnabled()) this.log(renderEvidenceCheck(check))
    if (error) throw error
    return check
  }
}
