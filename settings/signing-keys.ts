import { loadSigningKeys, type Algorithm } from '../plugins/auth/keys.js'
import { ConfigError } from './error.js'
import { readPrivateKey, type FileSettings } from './files.js'

type KeySettings = Omit<FileSettings, 'RESOURCES'> & { JWT_ALGORITHM: Algorithm, SECRET_KEY?: string, JWT_PREVIOUS_KEYS?: string }

function keyVariable (settings: KeySettings, message: string): string {
  if (message.startsWith('previousKeys')) return 'JWT_PREVIOUS_KEYS'
  if (message.startsWith('privateKey is')) return settings.JWT_PRIVATE_KEY_FILE === undefined ? 'JWT_PRIVATE_KEY' : 'JWT_PRIVATE_KEY_FILE'
  return 'JWT_ALGORITHM'
}

/** Loads the signing keys as the auth plugin will, so that a missing or unfit key stops a start before the database opens. */
export function checkSigningKeys (settings: KeySettings, privateKey = readPrivateKey(settings)): void {
  try {
    loadSigningKeys({ algorithm: settings.JWT_ALGORITHM, secret: settings.SECRET_KEY ?? '', privateKey, previousKeys: settings.JWT_PREVIOUS_KEYS })
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'AUTH_INVALID_OPTIONS') throw err
    // The plugin's prefix names no setting; the variable does.
    const reason = (err as Error).message.replace(/^auth plugin: /, '')
    throw new ConfigError(`${keyVariable(settings, reason)}: ${reason}`)
  }
}
