import { Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { MINI_CVM_VARIANTS } from '../../lib/mini/index.js'
import { DEFAULT_KUBERNETES_MINOR } from '../../lib/versions/index.js'
import { runMiniUpCommand, type MiniUpReport } from '../../wiring/mini.js'

export default class MiniUp extends BaseCommand {
  static override description =
    'Start a local cluster on this machine: every node runs the real node software with its own swtpm, LUKS2 disk image and address; Kubernetes itself is SIMULATED by contract fakes. It keeps running until `mini down`.'
  static override examples = [
    '<%= config.bin %> mini up -C ./mini',
    '<%= config.bin %> mini up -C ./mini --control-planes 3 --workers 3',
    '<%= config.bin %> mini up -C ./mini --json',
    '<%= config.bin %> mini up -C ./mini --attestation qemu-vtpm',
    'sudo <%= config.bin %> mini up -C ./mini --machines vm --workers 1',
  ]
  static override flags = {
    ...BaseCommand.workspaceFlag,
    'control-planes': Flags.integer({
      description: 'number of control-plane nodes',
      default: 1,
      min: 1,
      max: 9,
    }),
    workers: Flags.integer({ description: 'number of worker nodes', default: 2, min: 0, max: 40 }),
    kubernetes: Flags.string({
      char: 'k',
      description: 'Kubernetes version',
      default: DEFAULT_KUBERNETES_MINOR,
    }),
    attestation: Flags.string({
      char: 'a',
      description:
        "attestation variant; tpm-ek (the default) manufactures every node's swtpm with EK certificates from a local CA of the cluster (swtpm_setup, swtpm_localca), which the workspace config trusts as the stand-in for a TPM manufacturer; qemu-vtpm takes any attestation key (development of the attestation itself); aws-sev-snp, gcp-sev-snp and qemu-tdx serve every node SEV-SNP reports or TDX quotes at its configfs-tsm directory from a STAND-IN AMD or Intel of the cluster (no CVM hardware here), whose root the workspace config pins",
      options: ['tpm-ek', 'qemu-vtpm', ...MINI_CVM_VARIANTS],
      default: async ({ flags }) => (flags.machines === 'vm' ? 'qemu-vtpm' : 'tpm-ek'),
      defaultHelp: async () => 'tpm-ek; qemu-vtpm with --machines vm',
    }),
    machines: Flags.string({
      description:
        'what each node is: process (a supervisor per node, its own namespace, swtpm and disk image; state disks not mapped) or vm (a QEMU VM per node booted from the node image, which `mini image` builds and caches: real systemd, TPM at /dev/tpmrm0, state disk mapped with dm-crypt + dm-integrity; needs root; minutes per node under TCG, attestation qemu-vtpm)',
      options: ['process', 'vm'],
      default: 'process',
    }),
    network: Flags.string({
      description:
        'namespaces: a network namespace per node (needs root); loopback: a loopback address per node',
      options: ['auto', 'netns', 'loopback'],
      default: 'auto',
    }),
    'skip-helm': Flags.boolean({ description: 'install no Helm releases (then helm need not be on PATH)' }),
    timeout: Flags.string({
      description:
        'give up when the nodes have not joined after this long (default 5m; 30m with --machines vm)',
    }),
    'merge-kubeconfig': Flags.boolean({
      description:
        "merge the cluster's admin kubeconfig into ~/.kube/config (or $KUBECONFIG's first file) beside what is there, and make it current, as kind and minikube do; `mini down` takes it out again",
    }),
    retain: Flags.boolean({
      description: 'on failure or Ctrl-C, keep what was started (for its logs) instead of removing it',
    }),
  }

  async run(): Promise<MiniUpReport> {
    const { flags } = await this.parse(MiniUp)
    return runMiniUpCommand(flags, {
      json: this.jsonEnabled(),
      log: (line) => this.log(line),
      warn: (line) => this.logToStderr(line),
    })
  }
}
