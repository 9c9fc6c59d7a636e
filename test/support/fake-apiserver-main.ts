/**
 * The Kubernetes API TEST DOUBLE (FakeApiServer) as a process, for the local demo (scripts/demo.sh):
 * `tsx test/support/fake-apiserver-main.ts STORAGE_DIR KUBECONFIG_OUT` keeps its objects as files in
 * STORAGE_DIR (what the kubeadm contract fake reads), writes an admin kubeconfig for it to
 * KUBECONFIG_OUT (0600), prints "listening URL" and serves until SIGTERM or SIGINT.
 */
import { writeFile } from 'node:fs/promises'
import { FakeApiServer } from './fake-apiserver.js'

const [dir, kubeconfig] = process.argv.slice(2)
if (!dir || !kubeconfig) {
  process.stderr.write('usage: fake-apiserver-main.ts STORAGE_DIR KUBECONFIG_OUT\n')
  process.exit(2)
}
const server = await new FakeApiServer({ dir }).start()
await writeFile(kubeconfig, server.kubeconfig(), { mode: 0o600 })
process.stdout.write(`listening ${server.url}\n`)
for (const signal of ['SIGTERM', 'SIGINT'] as const)
  process.once(signal, () => void server.stop().then(() => process.exit(0)))
