import { Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import type { ImageResult } from '../../lib/vm/index.js'
import { ensureNodeImage, vmImageCacheDir } from '../../wiring/vm.js'

export default class MiniImage extends BaseCommand {
  static override description =
    "Build the node VM image `mini up --machines vm` boots (Debian packages from the mirror, this project and its Node.js runtime, the project's systemd units), once per version: it is cached under a hash of its inputs. Needs root (mmdebstrap)."
  static override examples = ['<%= config.bin %> mini image', '<%= config.bin %> mini image --json']
  static override flags = {
    'cache-dir': Flags.directory({
      description: "where images are kept (default: the package's .cache/vm-images, or $CONSTELL_VM_CACHE)",
    }),
  }

  async run(): Promise<ImageResult> {
    const { flags } = await this.parse(MiniImage)
    const started = Date.now()
    const image = await ensureNodeImage(
      (line) => process.stderr.write(`• ${line}\n`),
      flags['cache-dir'] ?? vmImageCacheDir(),
    )
    const m = image.manifest
    this.log(
      `${image.built ? `built in ${((Date.now() - started) / 1000).toFixed(1)} s` : 'cached'}: ${image.files.dir}`,
    )
    this.log(
      `  kernel ${m.kernel}, Node.js ${m.nodeVersion}, ${Object.keys(m.packages).length} Debian packages, root disk ${(m.rootDiskBytes / 2 ** 20).toFixed(0)} MiB on disk, built ${m.builtAt} in ${m.buildSeconds} s`,
    )
    return image
  }
}
