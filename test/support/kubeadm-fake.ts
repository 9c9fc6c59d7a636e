/** Where the kubeadm contract fake lives (simulator/kubeadm-fake/kubeadm, shipped for `mini`). */
import { simulatorPaths } from '../../src/lib/simulator/index.js'
import { REPO_ROOT } from './cli.js'

export const KUBEADM_FAKE = simulatorPaths(REPO_ROOT).kubeadmFake
