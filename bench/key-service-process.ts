/**
 * The key service of bench/join.bench.ts in a process of its own, as on a control plane (its own
 * systemd unit), so that the bench tells the join service's CPU from the key service's. Prints
 * `{"address": HOST:PORT}` as one JSON line on stdout, then serves until stdin closes.
 */
import { createKeyService } from '../src/lib/kms/index.js'
import { silentLogger } from '../src/lib/system/logger.js'
import { MASTER } from '../test/joinservice/fakes.js'

const keyService = createKeyService({ listen: '127.0.0.1:0', masterSecret: MASTER, logger: silentLogger })
process.stdout.write(JSON.stringify({ address: await keyService.start() }) + '\n')
process.stdin.resume()
process.stdin.on('end', () => void keyService.stop(1_000))
