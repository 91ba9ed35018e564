"""A relying party written with Debian's python3-authlib, driven by test/oidc/rp-authlib.test.ts.

Line protocol (one JSON object per line on stdout; one line on stdin):
  -> {"step": "authorize", "url": "<authorization URL>"}
  <- the redirect URL the provider sent the browser to (code, state, iss)
  -> one {"step": ...} line per later step (token, userinfo, refresh, replay)
  -> {"step": "logout", "url": "<end-session URL>"}  (RP-initiated logout: the browser confirms)
  <- where the browser ended: the post-logout redirect URL, or the provider's page
  -> {"step": "after_logout", ...}, then {"step": "done"}
A failure prints {"step": "error", "at": <step>, "type": <exception class>, "error": <authlib's words>}
and exits 1.

Usage: authlib_client.py ISSUER CLIENT_ID CLIENT_SECRET AUTH_METHOD REDIRECT_URI [POST_LOGOUT_REDIRECT_URI]
"""

import json
import secrets
import sys
import time
from urllib.parse import parse_qs, urlencode, urlparse

import authlib
import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session
from authlib.jose import JsonWebKey, JsonWebToken
from authlib.oidc.core import CodeIDToken
from authlib.oidc.discovery import OpenIDProviderMetadata

ISSUER, CLIENT_ID, CLIENT_SECRET, AUTH_METHOD, REDIRECT_URI = sys.argv[1:6]
POST_LOGOUT = sys.argv[6] if len(sys.argv) > 6 else ''
step = 'start'


def say(obj):
    print(json.dumps(obj), flush=True)


def id_token_claims(id_token, jwks, nonce, access_token):
    """authlib's ID token checks: RS256 signature by the JWKS key of its kid, then CodeIDToken
    (iss, aud, exp, iat, nonce when sent, azp, at_hash when present)."""
    # Only RS256, the algorithm the client is registered for: no alg chosen by the token.
    claims = JsonWebToken(['RS256']).decode(
        id_token,
        JsonWebKey.import_key_set(jwks),
        claims_cls=CodeIDToken,
        claims_options={
            'iss': {'essential': True, 'value': ISSUER},
            'aud': {'essential': True, 'value': CLIENT_ID},
        },
        claims_params={'nonce': nonce, 'client_id': CLIENT_ID, 'access_token': access_token},
    )
    claims.validate(now=int(time.time()), leeway=5)
    return dict(claims)


def main():
    global step
    step = 'discovery'
    raw = requests.get(ISSUER + '/.well-known/openid-configuration', timeout=10).json()
    if raw.get('issuer') != ISSUER:
        raise ValueError('issuer mismatch: ' + str(raw.get('issuer')))
    # authlib's metadata rules require https everywhere; the test's issuer is http on loopback.
    # Its refusal is reported as it is, and every other rule is checked on the same document
    # with only the origin's scheme changed.
    https_refusal = None
    try:
        OpenIDProviderMetadata(raw).validate()
    except ValueError as e:
        https_refusal = str(e)
    https_origin = 'https://' + urlparse(ISSUER).netloc
    OpenIDProviderMetadata(json.loads(json.dumps(raw).replace(ISSUER, https_origin))).validate()
    jwks = requests.get(raw['jwks_uri'], timeout=10).json()
    say({'step': 'discovery', 'issuer': raw['issuer'], 'http_refusal': https_refusal,
         'metadata_valid': True, 'authlib': authlib.__version__})

    step = 'authorize'
    session = OAuth2Session(
        CLIENT_ID,
        CLIENT_SECRET,
        scope='openid email',
        redirect_uri=REDIRECT_URI,
        token_endpoint_auth_method=AUTH_METHOD,
        code_challenge_method='S256',
    )
    code_verifier = generate_token(48)
    nonce = generate_token(20)
    url, state = session.create_authorization_url(
        raw['authorization_endpoint'], nonce=nonce, code_verifier=code_verifier)
    say({'step': 'authorize', 'url': url})

    redirect = sys.stdin.readline().strip()
    step = 'callback'
    params = parse_qs(urlparse(redirect).query)
    # authlib 1.2 does not read RFC 9207's iss: checked here, by this script, not by authlib.
    iss = params.get('iss', [None])[0]
    if iss != ISSUER:
        raise ValueError('authorization response iss mismatch: ' + str(iss))

    step = 'token'
    # authlib checks the response's state against the session's, and sends the verifier.
    token = session.fetch_token(
        raw['token_endpoint'], authorization_response=redirect, state=state,
        code_verifier=code_verifier)
    claims = id_token_claims(token['id_token'], jwks, nonce, token['access_token'])
    say({'step': 'token', 'auth_method': AUTH_METHOD, 'sub': claims['sub'], 'nonce': claims.get('nonce'),
         'aud': claims['aud'], 'iss': claims['iss'], 'has_at_hash': 'at_hash' in claims,
         'has_refresh_token': 'refresh_token' in token, 'scope': token.get('scope')})

    step = 'userinfo'
    info = session.get(raw['userinfo_endpoint'], timeout=10)
    info.raise_for_status()
    say({'step': 'userinfo', 'status': info.status_code, 'body': info.json()})

    step = 'refresh'
    spent = token['refresh_token']
    renewed = session.refresh_token(raw['token_endpoint'], refresh_token=spent)
    again = id_token_claims(renewed['id_token'], jwks, None, renewed['access_token'])
    info = session.get(raw['userinfo_endpoint'], timeout=10)
    say({'step': 'refresh', 'sub': again['sub'], 'sid_same': again.get('sid') == claims.get('sid'),
         'new_access_token': renewed['access_token'] != token['access_token'],
         'new_refresh_token': renewed['refresh_token'] != spent,
         'userinfo_status': info.status_code, 'userinfo': info.json()})

    step = 'replay'
    try:
        session.refresh_token(raw['token_endpoint'], refresh_token=spent)
        say({'step': 'replay', 'refused': False})
    except Exception as e:  # authlib's OAuthError carries the protocol's error code
        say({'step': 'replay', 'refused': True, 'error': getattr(e, 'error', str(e))})

    step = 'logout'
    # authlib has no RP-initiated logout helper: the end-session URL is built here from the
    # discovered end_session_endpoint, with the latest ID token as the hint.
    query = {'id_token_hint': renewed['id_token'], 'client_id': CLIENT_ID}
    logout_state = secrets.token_urlsafe(12)
    if POST_LOGOUT:
        query.update({'post_logout_redirect_uri': POST_LOGOUT, 'state': logout_state})
    say({'step': 'logout', 'url': raw['end_session_endpoint'] + '?' + urlencode(query)})
    landed = sys.stdin.readline().strip()
    step = 'after_logout'
    back = urlparse(landed)
    returned = POST_LOGOUT != '' and landed.split('?')[0] == POST_LOGOUT
    try:
        session.refresh_token(raw['token_endpoint'], refresh_token=renewed['refresh_token'])
        ended = None
    except Exception as e:
        ended = getattr(e, 'error', str(e))
    say({'step': 'after_logout', 'returned': returned,
         'state_same': returned and parse_qs(back.query).get('state', [None])[0] == logout_state,
         'landed': landed, 'refresh_after_logout': ended})
    say({'step': 'done'})


try:
    main()
except Exception as e:
    say({'step': 'error', 'at': step, 'type': type(e).__name__, 'error': str(e),
         'description': getattr(e, 'description', None)})
    sys.exit(1)
