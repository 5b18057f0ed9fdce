import { DOCS, UsageError, type Command, type Values } from './command.js'

export const keys: Command = {
  words: ['generate'],
  synopsis: 'generate [--algorithm ALG]',
  summary: 'print a new token signing key, a private JWK for JWT_PRIVATE_KEY',
  description: 'Prints a new private key as one line of JWK JSON, with its kid (its RFC 7638 thumbprint), for\n' +
    'JWT_PRIVATE_KEY or a JWT_PRIVATE_KEY_FILE. It opens no database.',
  notes: 'Keep the output secret. To rotate: publish the old key in JWT_PREVIOUS_KEYS (its public part is\n' +
    'enough), set the new one, and drop the old one once the tokens it signed have expired\n' +
    `(REFRESH_TOKEN_EXPIRE_DAYS). See ${DOCS}/operations.md#rotating-the-signing-key`,
  options: { algorithm: { type: 'string', value: 'ALG', description: 'EdDSA (the default, Ed25519) or ES256 (P-256)' } },
  run: generateKeys
}

async function generateKeys (values: Values, usage: string) {
  const algorithm = values.algorithm ?? 'EdDSA'
  if (algorithm !== 'EdDSA' && algorithm !== 'ES256') throw new UsageError(`keys: --algorithm takes EdDSA or ES256 (got ${String(algorithm)})`, usage)
  const { generateKey } = await import('../plugins/auth/keys.js')
  process.stdout.write(`${JSON.stringify(generateKey(algorithm))}\n`)
}
