/**
 * Renders a plan as cloud-config (capi.md §3). A document that refers to instance data such as
 * `{{ ds.meta_data.local_hostname }}`, as CABPK's templates do, gets the `## template: jinja` header
 * so cloud-init fills it in; nothing else the user wrote is ever evaluated (cloud-init-jinja.ts).
 * kubeadm runs from runcmd. Each section is built in cloud-init-sections.ts; this file only fixes
 * their order.
 */
import { stringifyYaml } from '../yaml/index.js'
import { jinjaSafeDocument } from './cloud-init-jinja.js'
import { dropUndefined } from './drop-undefined.js'
import {
  bootcmdSection,
  diskSetupSection,
  fsSetupSection,
  mountsSection,
  ntpSection,
  runcmdSection,
  usersSection,
  writeFilesSection,
} from './cloud-init-sections.js'
import type { BootstrapPlan } from './types.js'

export const CLOUD_CONFIG_HEADER = '#cloud-config\n'

export function renderCloudConfig(plan: BootstrapPlan): string {
  const doc = dropUndefined({
    write_files: writeFilesSection(plan),
    bootcmd: bootcmdSection(plan.bootCommands),
    runcmd: runcmdSection(plan),
    ntp: ntpSection(plan.ntp),
    users: usersSection(plan.users),
    disk_setup: diskSetupSection(plan.diskSetup),
    fs_setup: fsSetupSection(plan.diskSetup),
    mounts: mountsSection(plan.mounts),
  })
  return jinjaSafeDocument(CLOUD_CONFIG_HEADER + stringifyYaml(doc))
}
