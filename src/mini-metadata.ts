/**
 * The metadata service of `constellation mini` as a process, without the CLI framework:
 *
 *   node dist/mini-metadata.js --listen HOST:PORT --view VIEW.json
 *
 * VIEW.json holds {members, endpointHost, initSecretHash} (MetadataView); it is read on every
 * request, so nodes added to it later are known at once. Serves until SIGTERM or SIGINT, exit 0.
 * Bad arguments: the usage on stderr, exit 2.
 */
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { ExitCode } from './lib/errors/index.js'
import { MetadataServer, type MetadataView } from './lib/mini/index.js'

const USAGE = 'usage: node mini-metadata.js --listen HOST:PORT --view VIEW.json\n'

let values: { listen?: string; view?: string }
try {
  values = parseArgs({
    strict: true,
    options: { listen: { type: 'string' }, view: { type: 'string' } },
  }).values
} catch (err) {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n${USAGE}`)
  process.exit(ExitCode.Usage)
}
const { listen, view } = values
if (!listen || !view) {
  process.stderr.write(USAGE)
  process.exit(ExitCode.Usage)
}
const server = new MetadataServer(() => JSON.parse(readFileSync(view, 'utf8')) as MetadataView)
const url = await server.start(listen)
process.stdout.write(`listening ${url}\n`)
for (const signal of ['SIGTERM', 'SIGINT'] as const)
  process.once(signal, () => void server.stop().then(() => process.exit(0)))
