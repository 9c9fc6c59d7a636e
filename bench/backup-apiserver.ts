/**
 * The backup bench's API server: the FakeApiServer TEST DOUBLE seeded with the custom resources,
 * in a process of its own (as a real API server is), so that the bench can tell the CLI's CPU from
 * the fake's. Prints its kubeconfig as one JSON line on stdout, then serves until stdin closes.
 */
import { startFakeApiServer } from '../src/lib/simulator/fake-apiserver.js'
import { seedCustomResources } from '../test/support/upgrade-workspace.js'

const count = Number(process.argv[2])
if (!Number.isInteger(count) || count < 0)
  throw new Error(`usage: backup-apiserver.ts <count>, got ${process.argv[2]}`)
const api = await startFakeApiServer()
seedCustomResources(api, count)
process.stdout.write(JSON.stringify({ kubeconfig: api.kubeconfig() }) + '\n')
process.stdin.resume()
process.stdin.on('end', () => void api.stop())
