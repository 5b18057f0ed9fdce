import { accountEmail, hashedPassword, refusal, withDatabase } from './accounts.js'
import { UsageError, type Command, type Values } from './command.js'

export const createUser: Command = {
  synopsis: '--email EMAIL [options]',
  summary: 'create a new account, password from a prompt or stdin',
  description: 'Creates an active, unverified, regular account with that email and the scope me, unless\n' +
    'the options say otherwise. An existing account is never changed: a taken email fails.',
  notes: 'The password is never an option (--password is refused). On a terminal it is typed twice\n' +
    'at a hidden prompt; otherwise stdin must hold it alone, on one line:\n' +
    '  plinth create-user --email ada@example.com --scopes me,items:read < password-file\n\n' +
    'A scope name is a lower-case letter, then up to 63 of a-z, 0-9 and : _ . - as in the API.\n\n' +
    'Environment: DATABASE_URL, PASSWORD_MIN_LENGTH, CREATE_TABLES_ON_STARTUP.',
  options: {
    email: { type: 'string', value: 'EMAIL', description: 'the account\'s email (required)' },
    superuser: { type: 'boolean', description: 'make it a superuser' },
    inactive: { type: 'boolean', description: 'create it inactive: it cannot log in until activated' },
    verified: { type: 'boolean', description: 'mark its email as verified' },
    scopes: { type: 'string', value: 'A,B', description: 'its scopes, comma-separated (default: me; \'\' for none)' }
  },
  run: create
}

/** `--scopes` as the API takes `scopes`: at most 32 names, each a ScopeName; empty for none. */
async function scopeNames (text: string): Promise<string[]> {
  const names = text.trim() === '' ? [] : text.split(',').map((name) => name.trim())
  if (names.length > 32) throw new UsageError(`invalid scopes: at most 32 (got ${names.length})`)
  const { ScopeName } = await import('../schemas/user.js')
  for (const name of names) {
    const reason = await refusal('scope', ScopeName(), name)
    if (reason !== undefined) throw new UsageError(`invalid scope "${name}": ${reason}`)
  }
  return names
}

async function create (values: Values, usage: string) {
  const { config, email } = await accountEmail('create-user', values.email, usage)
  const scopes = typeof values.scopes === 'string' ? await scopeNames(values.scopes) : undefined
  const hashed = await hashedPassword(config)
  const { createUserRepository, scopeText } = await import('../db/users.js')
  await withDatabase(config, async (db) => {
    const user = await createUserRepository(db).create({
      email,
      hashed_password: hashed,
      is_superuser: values.superuser === true,
      is_active: values.inactive !== true,
      is_verified: values.verified === true,
      ...(scopes && { scopes: scopeText(scopes) })
    })
    if (!user) throw new Error(`the email ${email.toLowerCase()} is already registered`)
    const traits = [user.is_superuser && 'superuser', user.is_active ? 'active' : 'inactive', user.is_verified ? 'verified' : 'unverified',
      user.scopes === '' ? 'no scopes' : `scopes ${user.scopes}`]
    console.log(`created user ${user.email} (id ${user.id}): ${traits.filter(Boolean).join(', ')}`)
  })
}
