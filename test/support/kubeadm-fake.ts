/** Where the kubeadm contract fake lives (test/fixtures/kubeadm-fake/kubeadm). */
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const KUBEADM_FAKE = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../fixtures/kubeadm-fake/kubeadm',
)
