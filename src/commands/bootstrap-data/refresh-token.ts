import { Args, Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { CliError, UsageError } from '../../lib/errors/index.js'
import { BOOTSTRAP_TOKEN_ID_PATTERN } from '../../lib/contract/index.js'
import { parseDuration } from '../../lib/system/index.js'
import { openCapiApi, refreshTokenSecret, type TokenRefresh } from '../../lib/bootstrapdata/index.js'

export default class BootstrapDataRefreshToken extends BaseCommand {
  static override description =
    'Extend the bootstrap token of join data for machines that have not joined yet (the token stays the same, so the user data keeps working)'
  static override examples = [
    '<%= config.bin %> bootstrap-data refresh-token abcdef --workload-kubeconfig constellation-admin.conf',
  ]
  static override args = {
    'token-id': Args.string({
      description: 'the token ID (the six characters before the dot)',
      required: true,
    }),
  }
  static override flags = {
    'workload-kubeconfig': Flags.string({ description: 'the cluster that holds the token', required: true }),
    'token-ttl': Flags.string({ description: 'new lifetime from now', default: '15m' }),
  }

  protected override interruptedState(): string {
    return "the token's expiry is as it was, or extended (one request)"
  }

  async run(): Promise<TokenRefresh & { tokenId: string }> {
    const { args, flags } = await this.parse(BootstrapDataRefreshToken)
    const tokenId = args['token-id']
    if (tokenId.includes('.'))
      throw new UsageError(
        'pass only the token ID, the part before the dot: the token secret must not be in argv',
      )
    if (!BOOTSTRAP_TOKEN_ID_PATTERN.test(tokenId))
      throw new UsageError(`token ID ${JSON.stringify(tokenId)} is not six characters of a-z 0-9`)
    const ttlMs = parseDuration(flags['token-ttl'], '--token-ttl')
    const api = await openCapiApi({ file: flags['workload-kubeconfig'] })
    const result = await refreshTokenSecret(api, tokenId, new Date(), ttlMs)
    if (result.state === 'missing')
      throw new CliError(
        `bootstrap token ${tokenId} is not in the cluster: it expired and was removed, or was never registered`,
        {
          hint: 'generate join data again (bootstrap-data generate), which issues a new token',
        },
      )
    this.log(
      result.state === 'refreshed'
        ? `Bootstrap token ${tokenId} now expires ${result.expires}`
        : `Bootstrap token ${tokenId} is still fresh (expires ${result.expires}); nothing changed`,
    )
    return { tokenId, ...result }
  }
}
