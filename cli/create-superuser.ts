import { accountEmail, hashedPassword, withDatabase } from './accounts.js'
import type { Command, Values } from './command.js'

export const createSuperuser: Command = {
  synopsis: '--email EMAIL',
  summary: 'create or promote a superuser, password from a prompt or stdin',
  description: 'Creates an active superuser with that email, its address verified. If the account exists,\n' +
    'makes it an active superuser, replaces its password and revokes its refresh tokens.',
  notes: 'The password is never an option (--password is refused). On a terminal it is typed twice\n' +
    'at a hidden prompt; otherwise stdin must hold it alone, on one line:\n' +
    '  plinth create-superuser --email admin@example.com < password-file\n\n' +
    'Environment: DATABASE_URL, PASSWORD_MIN_LENGTH, CREATE_TABLES_ON_STARTUP.',
  options: { email: { type: 'string', value: 'EMAIL', description: 'the account\'s email (required)' } },
  run: createOrPromote
}

async function createOrPromote (values: Values, usage: string) {
  const { config, email } = await accountEmail('create-superuser', values.email, usage)
  const hashed = await hashedPassword(config)
  const { createUserRepository } = await import('../db/users.js')
  const { createSessionRepository } = await import('../db/sessions.js')
  await withDatabase(config, async (db) => {
    const users = createUserRepository(db)
    const { created, user } = await users.createIfAbsent({ email, hashed_password: hashed, is_superuser: true, is_verified: true, scopes: 'me' })
    if (created) return console.log(`created superuser ${user.email} (id ${user.id})`)
    await users.update(user.id, { hashed_password: hashed, is_superuser: true, is_active: true })
    // As for a password change through the API: the sessions opened with the old password end.
    const ended = await createSessionRepository(db).revokeAll(user.id)
    const change = !user.is_superuser ? 'promoted to active superuser' : user.is_active ? 'already a superuser' : 'reactivated superuser'
    console.log(`existing account ${user.email} (id ${user.id}) ${change}; password replaced, ${ended} refresh token(s) revoked`)
  })
}
