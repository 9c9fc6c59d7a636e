/** The cluster contract: the numbers and shapes every node, service and the CLI must agree on. */
export { API_SERVER_PORT, apiServerEndpoint, controlPlaneEndpoint } from './api-server.js'

export {
  BOOTSTRAP_TOKEN_ID_PATTERN,
  BOOTSTRAP_TOKEN_IN_TEXT,
  BOOTSTRAP_TOKEN_PATTERN,
  canonicalDiskUuid,
  MEASUREMENT_SALT_BYTES,
  MEASUREMENT_SECRET_BYTES,
  STATE_DISK_KEY_BYTES,
} from './secrets.js'
