import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import { describe, expect, it } from 'vitest';
import { SoftAuthenticator } from '../helpers/authenticator.js';

/**
 * The test authenticator itself: what it makes must pass @simplewebauthn/server's own checks, or
 * the service's refusals would prove nothing. Each bend must fail them.
 */
const ORIGIN = 'https://id.example';
const RP_ID = 'id.example';

async function registered(auth: SoftAuthenticator) {
  const options = await generateRegistrationOptions({
    rpName: 'Test',
    rpID: RP_ID,
    userName: 'someone',
    attestationType: 'none',
    authenticatorSelection: { residentKey: 'preferred', userVerification: 'required' },
  });
  const response = auth.create(options);
  const result = await verifyRegistrationResponse({
    // biome-ignore lint/suspicious/noExplicitAny: the standard JSON shape, built by hand
    response: response as any,
    expectedChallenge: options.challenge,
    expectedOrigin: ORIGIN,
    expectedRPID: RP_ID,
    requireUserVerification: true,
  });
  return result;
}

describe('SoftAuthenticator against @simplewebauthn/server', () => {
  it('registers and then asserts, and a bent assertion fails', async () => {
    const auth = new SoftAuthenticator(ORIGIN, RP_ID);
    const reg = await registered(auth);
    expect(reg.verified).toBe(true);
    const credential = reg.registrationInfo?.credential;
    expect(credential?.id).toBe(auth.credentialId);
    const check = async (bend: Parameters<SoftAuthenticator['get']>[1]) => {
      const options = await generateAuthenticationOptions({ rpID: RP_ID, userVerification: 'required' });
      try {
        const r = await verifyAuthenticationResponse({
          // biome-ignore lint/suspicious/noExplicitAny: the standard JSON shape, built by hand
          response: auth.get(options, bend) as any,
          expectedChallenge: options.challenge,
          expectedOrigin: ORIGIN,
          expectedRPID: RP_ID,
          requireUserVerification: true,
          credential: credential!,
        });
        return r.verified;
      } catch {
        return false;
      }
    };
    expect(await check({})).toBe(true);
    expect(await check({ origin: 'https://evil.example' })).toBe(false);
    expect(await check({ rpId: 'evil.example' })).toBe(false);
    expect(await check({ userVerified: false })).toBe(false);
    expect(await check({ wrongKey: true })).toBe(false);
    expect(await check({ challenge: 'c29tZXRoaW5nLWVsc2U' })).toBe(false);
  });
});
