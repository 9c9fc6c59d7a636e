/**
 * Renders a plan as an Ignition spec 3.3.0 config (capi.md §4, moved from CLC/spec 2.3 to spec 3,
 * which today's Ignition and ignition-validate understand). Files become data URLs; kubeadm runs
 * from kubeadm.service, which runs once because the script moves its config away on success.
 * Each section is built in ignition-sections.ts; this file only assembles them.
 */
import { dropUndefined } from './drop-undefined.js'
import {
  passwdUsers,
  storageDisks,
  storageFiles,
  storageFilesystems,
  systemdUnits,
} from './ignition-sections.js'
import type { BootstrapTemplates } from './templates.js'
import type { BootstrapPlan } from './types.js'

export const IGNITION_VERSION = '3.3.0'

export function renderIgnition(plan: BootstrapPlan, templates: BootstrapTemplates): string {
  const users = passwdUsers(plan.users)
  const units = systemdUnits(plan, templates)
  const config = dropUndefined({
    ignition: { version: IGNITION_VERSION },
    passwd: users && { users },
    storage: dropUndefined({
      files: storageFiles(plan, templates),
      disks: storageDisks(plan.diskSetup),
      filesystems: storageFilesystems(plan.diskSetup),
    }),
    systemd: units && { units },
  })
  // Compact: user data is counted in bytes against the provider's limit.
  return `${JSON.stringify(config)}\n`
}
