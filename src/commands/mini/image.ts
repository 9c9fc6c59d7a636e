import { Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { CliError } from '../../lib/errors/index.js'
import { abortOnInterrupt, SIGNAL_EXIT_CODES, type InterruptSignal } from '../../lib/system/index.js'
import type { ImageResult } from '../../lib/vm/index.js'
import { buildNodeImage, staleImagesNote, vmImageCacheDir } from '../../wiring/vm.js'

export default class MiniImage extends BaseCommand {
  static override description =
    "Build the image mini's virtual-machine nodes boot (Debian packages from the mirror, this project and its Node.js runtime, the project's systemd units), once per version: it is cached under a hash of its inputs. Needs root (mmdebstrap)."
  static override examples = [
    '<%= config.bin %> mini image',
    '<%= config.bin %> mini image --prune',
    '<%= config.bin %> mini image --json',
  ]
  static override flags = {
    prune: Flags.boolean({
      description:
        'remove every other cached image and Debian base (a running VM cluster of another version needs its image to power nodes on again)',
    }),
    'cache-dir': Flags.directory({
      description: "where images are kept (default: the package's .cache/vm-images, or $CONSTELL_VM_CACHE)",
    }),
  }

  async run(): Promise<ImageResult & { pruned: string[] }> {
    const { flags } = await this.parse(MiniImage)
    const started = Date.now()
    const cacheDir = flags['cache-dir'] ?? vmImageCacheDir()
    // claimed while it builds: Ctrl-C ends mmdebstrap's whole session and the build's files go
    const interrupt = abortOnInterrupt()
    const image = await buildNodeImage({ cacheDir, prune: flags.prune, signal: interrupt.signal }, (line) =>
      process.stderr.write(`• ${line}\n`),
    )
      .catch((err: unknown) => {
        if (!interrupt.signal.aborted) throw err
        const by = interrupt.signal.reason as InterruptSignal
        throw new CliError(
          `mini image was interrupted (${by}): nothing was cached, the build's files are removed`,
          {
            exitCode: SIGNAL_EXIT_CODES[by],
          },
        )
      })
      .finally(() => interrupt.release())
    const m = image.manifest
    this.log(
      `${image.built ? `built in ${((Date.now() - started) / 1000).toFixed(1)} s` : 'cached'}: ${image.files.dir}`,
    )
    this.log(
      `  kernel ${m.kernel}, Node.js ${m.nodeVersion}, ${Object.keys(m.packages).length} Debian packages, root disk ${(m.rootDiskBytes / 2 ** 20).toFixed(0)} MiB on disk, built ${m.builtAt} in ${m.buildSeconds} s`,
    )
    for (const removed of image.pruned) this.log(`removed ${removed}`)
    const note = flags.prune ? undefined : await staleImagesNote(cacheDir, image)
    if (note) this.logToStderr(`Note: ${note}`)
    return image
  }
}
