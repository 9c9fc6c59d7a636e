import { Args, Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { signMeasurementsFile, type SignResult } from '../../lib/measurements/index.js'

export default class MeasurementsSign extends BaseCommand {
  static override description =
    "For whoever builds node images: check a measurements file (Constellation's JSON: csp, attestationVariant, image, measurements) and sign it as `cosign sign-blob` does (base64 ECDSA P-256 over its SHA-256), so operators can `config fetch-measurements` it against your public key"
  static override examples = [
    '<%= config.bin %> measurements sign --key builder.key measurements.json',
    '<%= config.bin %> measurements sign --key signer.pem measurements.json --output - > measurements.json.sig',
  ]
  static override args = {
    file: Args.string({ description: 'the measurements JSON to sign', required: true }),
  }
  static override flags = {
    key: Flags.string({
      description:
        'PEM ECDSA P-256 private key (PKCS#8 or SEC1, not encrypted), mode 0600; its bytes are never printed',
      required: true,
    }),
    output: Flags.string({
      char: 'o',
      description:
        'where the signature goes: a new file (default FILE.sig, never overwritten), or - for standard output',
    }),
  }

  async run(): Promise<SignResult> {
    const { args, flags } = await this.parse(MeasurementsSign)
    const result = await signMeasurementsFile({ file: args.file, keyFile: flags.key, output: flags.output })
    if (result.output === '-') {
      if (!this.jsonEnabled()) process.stdout.write(`${result.signature}\n`)
    } else {
      this.log(
        `Signed ${result.file} (image ${result.image}; ${result.variants.join(', ')}; sha256 ${result.sha256}).`,
      )
      this.log(`Signature: ${result.output}`)
    }
    return result
  }
}
