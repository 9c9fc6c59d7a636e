import { BaseCommand } from '../base-command.js'
import { DEFAULT_KUBERNETES_VERSION, supportedVersions } from '../lib/versions/index.js'

export interface VersionInfo {
  version: string
  node: string
  platform: string
  kubernetesVersions: string[]
  defaultKubernetesVersion: string
}

export default class Version extends BaseCommand {
  static override description =
    'Print the CLI version, Node.js, platform and the supported Kubernetes versions'
  static override examples = ['<%= config.bin %> version', '<%= config.bin %> version --json']

  async run(): Promise<VersionInfo> {
    await this.parse(Version)
    const info: VersionInfo = {
      version: this.config.version,
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      kubernetesVersions: supportedVersions(),
      defaultKubernetesVersion: DEFAULT_KUBERNETES_VERSION,
    }
    this.log(`${this.config.bin} ${info.version} (node ${info.node}, ${info.platform})`)
    this.log(`Kubernetes: ${info.kubernetesVersions.join(', ')} (default ${info.defaultKubernetesVersion})`)
    return info
  }
}
