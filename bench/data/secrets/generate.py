"""Write the secret-redaction bench corpus: ``positives.jsonl`` and ``negatives.jsonl`` beside this file.

    python bench/data/secrets/generate.py

Every secret is FAKE but has the format its vendor documents (prefix, alphabet, length); the values come from a
seeded generator, so the files are the same on every run. A positive record is ``{"kind", "text", "secret"}``:
``secret`` is the exact substring that must not survive redaction. A negative record is ``{"kind", "text"}``: an
ordinary engineering note (hashes, UUIDs, commit SHAs, base64 snippets, versions, URLs without credentials,
configuration prose) that must come out unchanged.

The corpus was written from the formats first, before the rules were tuned against it; ``tests/test_redact.py``
keeps a smaller, separate set of cases.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
RNG = random.Random(20261201)

LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase
DIGITS = string.digits
ALNUM = LOWER + UPPER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def rand(alphabet: str, n: int) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def b64(n_bytes: int) -> str:
    return base64.b64encode(RNG.randbytes(n_bytes)).decode()


def b64url(n_bytes: int) -> str:
    return base64.urlsafe_b64encode(RNG.randbytes(n_bytes)).rstrip(b"=").decode()


def jwt() -> str:
    header = base64.urlsafe_b64encode(json.dumps({"alg": "RS256", "typ": "JWT"}).encode()).rstrip(b"=").decode()
    body = {"sub": rand(DIGITS, 10), "iat": RNG.randint(1.6e9, 1.8e9), "scope": "read"}
    payload = base64.urlsafe_b64encode(json.dumps(body).encode()).rstrip(b"=").decode()
    return f"{header}.{payload}.{b64url(64)}"


def password() -> str:
    words = ["hunter", "Summer", "Orange", "Falcon", "winter", "Dragon", "monkey", "Purple", "Tiger", "rocket"]
    return RNG.choice(words) + rand(DIGITS, RNG.randint(1, 4)) + RNG.choice("!#$%&*@?X") + rand(UPPER + LOWER, 2)


def pem(label: str) -> str:
    body = "\n".join(b64(48) for _ in range(RNG.randint(3, 6)))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


# kind -> a function returning (token, contexts); each context is a template with {s} for the secret.
NEUTRAL = [
    "deployed with {s} yesterday, works",
    "note: {s}",
    "the staging credential is `{s}`",
    "{s} is the one the CI uses",
    "curl https://api.example.com/v1/me -H 'X-Api-Key: {s}'",
    "use {s} for the nightly job (rotate in March)",
    "设置好了：{s} 用于预发布环境",
]


def kw(*names: str) -> list[str]:
    """Contexts that name the secret through a variable or field."""
    out: list[str] = []
    for name in names:
        out += [f"export {name}={{s}}", f'"{name.lower()}": "{{s}}"', f"{name}: {{s}}", f"{name} = '{{s}}'"]
    return out


FORMATS: dict[str, tuple[Callable[[], str], list[str]]] = {
    "aws-access-key": (lambda: RNG.choice(["AKIA", "ASIA"]) + rand(UPPER + "234567", 16), NEUTRAL),
    "aws-secret-key": (lambda: rand(ALNUM + "+/", 40), kw("AWS_SECRET_ACCESS_KEY", "aws_secret_access_key")),
    "github-classic-token": (lambda: RNG.choice(["ghp_", "gho_", "ghs_", "ghu_", "ghr_"]) + rand(ALNUM, 36), NEUTRAL),
    "github-fine-grained-pat": (lambda: "github_pat_11" + rand(UPPER + DIGITS, 20) + "_" + rand(ALNUM, 59), NEUTRAL),
    "gitlab-token": (lambda: RNG.choice(["glpat-", "gldt-", "glrt-"]) + rand(URLSAFE, 20), NEUTRAL),
    "slack-token": (lambda: RNG.choice(["xoxb-", "xoxp-"]) + rand(DIGITS, 12) + "-" + rand(DIGITS, 13) + "-"
                    + rand(ALNUM, 24), NEUTRAL),
    "slack-webhook": (lambda: "https://hooks.slack.com/services/T" + rand(UPPER + DIGITS, 8) + "/B"
                      + rand(UPPER + DIGITS, 10) + "/" + rand(ALNUM, 24), ["post to {s} when the build breaks"]),
    "stripe-secret-key": (lambda: RNG.choice(["sk_live_", "rk_live_", "sk_test_"]) + rand(ALNUM, 24), NEUTRAL),
    "openai-key": (lambda: RNG.choice([
        lambda: "sk-proj-" + rand(URLSAFE, 58) + "T3BlbkFJ" + rand(URLSAFE, 58),
        lambda: "sk-" + rand(ALNUM, 20) + "T3BlbkFJ" + rand(ALNUM, 20),
        lambda: "sk-svcacct-" + rand(URLSAFE, 74) + "T3BlbkFJ" + rand(URLSAFE, 74),
    ])(), NEUTRAL),
    "anthropic-key": (lambda: "sk-ant-api03-" + rand(URLSAFE, 93) + "AA", NEUTRAL),
    "google-api-key": (lambda: "AIza" + rand(URLSAFE, 35), NEUTRAL),
    "google-oauth-client-secret": (lambda: "GOCSPX-" + rand(URLSAFE, 28), NEUTRAL),
    "google-oauth-access-token": (lambda: "ya29." + rand(URLSAFE, 120), NEUTRAL),
    "gcp-service-account-key-id": (lambda: rand(HEX, 40), [
        '{{"type": "service_account", "project_id": "shop-prod", "private_key_id": "{s}"}}',
        '"private_key_id": "{s}",']),
    "gcp-service-account-private-key": (lambda: pem("PRIVATE KEY").replace("\n", "\\n"), [
        '{{"type": "service_account", "private_key": "{s}\\n", "client_email": "ci@shop.iam.gserviceaccount.com"}}']),
    "private-key-block": (lambda: pem(RNG.choice(["RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY",
                                                   "PRIVATE KEY", "DSA PRIVATE KEY"])),
                          ["deploy key:\n{s}\n", "{s}"]),
    "jwt": (jwt, [*NEUTRAL, "Authorization: Bearer {s}"]),
    "npm-token": (lambda: "npm_" + rand(ALNUM, 36), [*NEUTRAL, "//registry.npmjs.org/:_authToken={s}"]),
    "pypi-token": (lambda: "pypi-AgEIcHlwaS5vcmc" + rand(URLSAFE, 120), NEUTRAL),
    "huggingface-token": (lambda: "hf_" + rand(LOWER + UPPER, 34), NEUTRAL),
    "azure-client-secret": (lambda: rand(ALNUM + "_~.", 3) + rand(DIGITS, 1) + "Q~" + rand(ALNUM + "_~.-", 34),
                            NEUTRAL),
    "azure-storage-account-key": (lambda: b64(64), [
        "DefaultEndpointsProtocol=https;AccountName=shopassets;AccountKey={s};EndpointSuffix=core.windows.net",
        "AccountKey={s}"]),
    "azure-service-bus-key": (lambda: b64(32), [
        "Endpoint=sb://shop.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
        "SharedAccessKey={s}"]),
    "azure-sas-token": (lambda: b64(32).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D"), [
        "https://shop.blob.core.windows.net/exports/a.csv?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-31T00:00:00Z"
        "&spr=https&sig={s}"]),
    "databricks-token": (lambda: "dapi" + rand(HEX, 32), NEUTRAL),
    "digitalocean-token": (lambda: RNG.choice(["dop_v1_", "doo_v1_", "dor_v1_"]) + rand(HEX, 64), NEUTRAL),
    "heroku-api-key": (lambda: "HRKU-AA" + rand(URLSAFE, 58), NEUTRAL),
    "heroku-legacy-key": (lambda: str(uuid.UUID(int=RNG.getrandbits(128))), kw("HEROKU_API_KEY")),
    "mailgun-key": (lambda: RNG.choice([
        lambda: "key-" + rand(LOWER + DIGITS, 32),
        lambda: rand(HEX, 32) + "-" + rand(HEX, 8) + "-" + rand(HEX, 8),
    ])(), NEUTRAL),
    "mailchimp-key": (lambda: rand(HEX, 32) + "-us" + str(RNG.randint(1, 21)), NEUTRAL),
    "sendgrid-key": (lambda: "SG." + rand(URLSAFE, 22) + "." + rand(URLSAFE, 43), NEUTRAL),
    "shopify-token": (lambda: RNG.choice(["shpat_", "shpca_", "shppa_", "shpss_"]) + rand(HEX, 32), NEUTRAL),
    "telegram-bot-token": (lambda: rand(DIGITS, RNG.randint(8, 10)) + ":AA" + rand(URLSAFE, 33), NEUTRAL),
    "twilio-api-key": (lambda: RNG.choice(["SK", "AC"]) + rand(HEX, 32), NEUTRAL),
    "twilio-auth-token": (lambda: rand(HEX, 32), kw("TWILIO_AUTH_TOKEN")),
    "vault-token": (lambda: RNG.choice(["hvs.", "hvb."]) + rand(URLSAFE, 90), NEUTRAL),
    "vault-legacy-token": (lambda: "s." + rand(ALNUM, 24), kw("VAULT_TOKEN")),
    "generic-client-secret": (lambda: rand(ALNUM, 32), kw("CLIENT_SECRET", "app_secret", "SECRET_KEY")),
    "linear-key": (lambda: "lin_api_" + rand(ALNUM, 40), NEUTRAL),
    "grafana-token": (lambda: RNG.choice([
        lambda: "glsa_" + rand(ALNUM, 32) + "_" + rand(HEX, 8),
        lambda: "glc_" + rand(ALNUM, 60),
    ])(), NEUTRAL),
    "postman-key": (lambda: "PMAK-" + rand(HEX, 24) + "-" + rand(HEX, 34), NEUTRAL),
    "doppler-token": (lambda: "dp.pt." + rand(ALNUM, 43), NEUTRAL),
    "pulumi-token": (lambda: "pul-" + rand(HEX, 40), NEUTRAL),
    "age-secret-key": (lambda: "AGE-SECRET-KEY-1" + rand("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58), NEUTRAL),
    "atlassian-token": (lambda: "ATATT3xFfGF0" + rand(URLSAFE, 180) + "=" + rand(HEX.upper(), 8), NEUTRAL),
    "square-token": (lambda: RNG.choice(["sq0csp-" + rand(URLSAFE, 43), "EAAA" + rand(URLSAFE, 60)]), NEUTRAL),
    "notion-token": (lambda: "ntn_" + rand(DIGITS, 11) + rand(ALNUM, 35), NEUTRAL),
    "planetscale-token": (lambda: RNG.choice(["pscale_tkn_", "pscale_pw_"]) + rand(URLSAFE, 43), NEUTRAL),
    "docker-hub-pat": (lambda: "dckr_pat_" + rand(URLSAFE, 27), NEUTRAL),
    "supabase-token": (lambda: "sbp_" + rand(HEX, 40), NEUTRAL),
    "groq-key": (lambda: "gsk_" + rand(ALNUM, 52), NEUTRAL),
    "replicate-token": (lambda: "r8_" + rand(ALNUM, 37), NEUTRAL),
    "tailscale-key": (lambda: "tskey-auth-" + rand(ALNUM, 12) + "CNTRL-" + rand(ALNUM, 33), NEUTRAL),
    "sentry-token": (lambda: "sntryu_" + rand(HEX, 64), NEUTRAL),
    "rubygems-key": (lambda: "rubygems_" + rand(HEX, 48), NEUTRAL),
    "newrelic-key": (lambda: "NRAK-" + rand(UPPER + DIGITS, 27), NEUTRAL),
    "dynatrace-token": (lambda: "dt0c01." + rand(UPPER + DIGITS, 24) + "." + rand(UPPER + DIGITS, 64), NEUTRAL),
    "alibaba-access-key": (lambda: "LTAI" + rand(ALNUM, 20), NEUTRAL),
    "figma-token": (lambda: "figd_" + rand(URLSAFE, 40), NEUTRAL),
    "url-password": (password, [
        "DATABASE_URL=postgres://app:{s}@db.internal:5432/shop",
        "mongodb+srv://admin:{s}@cluster0.ab1cd.mongodb.net/prod?retryWrites=true",
        "amqp://guest:{s}@rabbit:5672/",
        "git clone https://deploy:{s}@git.example.com/shop.git"]),
    "connection-string-password": (password, [
        "Server=tcp:shop.database.windows.net,1433;Database=shop;User ID=app;Password={s};Encrypt=true",
        "jdbc:mysql://db:3306/shop?user=app&password={s}&useSSL=true",
        "host=db port=5432 dbname=shop user=app password={s} sslmode=require"]),
    "password-in-prose": (password, [
        "the admin password is {s}",
        "The root password for the staging box is {s} (change it)",
        "wifi password: {s}",
        "数据库密码是 {s}",
        "db password was reset to {s} today",
        "machine api.example.com login bot password {s}"]),
    "password-assignment": (password, [
        *kw("DB_PASSWORD", "password", "REDIS_PASS"), "mysql -u root -p{s} shop", "sshpass -p '{s}' ssh deploy@web1",
                                          "<password>{s}</password>", "curl -u admin:{s} https://ci.example.com/api/json"]),
    "basic-auth-header": (lambda: base64.b64encode(f"admin:{password()}".encode()).decode(),
                          ["Authorization: Basic {s}", "curl -H 'Authorization: Basic {s}' https://x.example.com"]),
    "bearer-token": (lambda: rand(ALNUM, 40), ["Authorization: Bearer {s}", "-H \"Authorization: Bearer {s}\""]),
    "generic-api-key": (lambda: rand(ALNUM, RNG.randint(24, 48)), kw("API_KEY", "apiKey", "X_API_TOKEN",
                                                                      "access_token", "auth_token")),
}

PER_KIND = 4


def positives() -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for kind, (make, contexts) in FORMATS.items():
        picks = RNG.sample(contexts, min(PER_KIND, len(contexts)))
        while len(picks) < PER_KIND:
            picks.append(RNG.choice(contexts))
        for context in picks:
            secret = make()
            out.append({"kind": kind, "text": context.replace("{s}", secret), "secret": secret})
    return out


def sha1() -> str:
    return hashlib.sha1(RNG.randbytes(16)).hexdigest()


def negatives() -> list[dict[str, str]]:
    """Ordinary notes: each generator is one family, called several times with fresh values."""
    def u() -> str:
        return str(uuid.UUID(int=RNG.getrandbits(128), version=4))

    families: dict[str, Callable[[], str]] = {
        "commit-sha": lambda: f"fixed in {sha1()} (cherry-picked to release/2.{RNG.randint(0, 9)})",
        "short-sha": lambda: f"revert {sha1()[:7]}: the cache key change broke the nightly",
        "uuid": lambda: f"request {u()} failed with 502 at the load balancer",
        "uuid-config": lambda: f'tenant_id = "{u()}"',
        "sha256": lambda: f"sha256: {hashlib.sha256(RNG.randbytes(8)).hexdigest()}  dist/app.tar.gz",
        "docker-digest": lambda: f"image: ghcr.io/acme/shop@sha256:{hashlib.sha256(RNG.randbytes(8)).hexdigest()}",
        "npm-integrity": lambda: f'"integrity": "sha512-{b64(64)}"',
        "base64-snippet": lambda: f"the fixture is base64: {b64(RNG.randint(12, 40))}",
        "png-data": lambda: f"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB{b64(16)}",
        "ssh-public-key": lambda: f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{b64(24)} dev@laptop",
        "version": lambda: f"bumped tantivy to 0.{RNG.randint(20, 30)}.{RNG.randint(0, 9)} and pydantic to "
                           f"2.{RNG.randint(0, 12)}.{RNG.randint(0, 9)}",
        "url": lambda: f"docs at https://docs.example.com/v{RNG.randint(1, 4)}/auth/tokens?lang=en#scopes",
        "git-url": lambda: f"remote: git@github.com:acme/shop-{RNG.randint(1, 99)}.git",
        "token-budget": lambda: f"max_tokens: {RNG.choice([256, 1024, 4096, 8192])}",
        "token-count": lambda: (f"the prompt used {RNG.randint(100, 9000)} tokens; "
                                f"token_budget = {RNG.randint(1, 9)}000"),
        "password-policy": lambda: RNG.choice([
            "Password: must be at least 12 characters", "password_min_length = 12",
            "Passwords: never commit them; use the secret manager", "the password field is required",
            "Password: required", "passwords must contain a digit and a symbol",
            "password reset emails go out through SES"]),
        "ci-summary": lambda: f"CI summary: pass: {RNG.randint(50, 300)}, fail: {RNG.randint(0, 3)}, "
                              f"skip: {RNG.randint(0, 9)}",
        "pwd": lambda: f"pwd: /srv/app{RNG.randint(1, 9)}/current",
        "secret-prose": lambda: RNG.choice([
            "secret: see the vault entry 'shop/prod'", "Token: ask in #infra", "api_key: required",
            "token: optional (defaults to the env var)", "secret: none", "credentials: from the instance profile",
            "the secret manager rotates keys every 90 days", "store the token in the keychain, not in a file"]),
        "k8s": lambda: f"secretName: shop-tls-{RNG.randint(1, 9)}\n  tokenTTL: {RNG.randint(1, 48)}h",
        "env-ref": lambda: RNG.choice([
            "export GITHUB_TOKEN=$(gh auth token)", "API_KEY=${API_KEY:?missing}",
            "password = os.environ['DB_PASSWORD']", "token: ${{ secrets.NPM_TOKEN }}",
            "api_key = settings.OPENAI_API_KEY", "password: {{ vault_db_password }}"]),
        "timing": lambda: f"p50 {RNG.randint(1, 90)} ms, p99 {RNG.randint(100, 900)} ms over "
                          f"{RNG.randint(1, 50)}k requests",
        "hex-color": lambda: f"brand colour #{rand(HEX, 6)} on #{rand(HEX, 6)}",
        "ip-port": lambda: f"redis at 10.{RNG.randint(0, 255)}.{RNG.randint(0, 255)}.{RNG.randint(1, 254)}:6379",
        "path": lambda: f"logs under /var/log/shop/{rand(LOWER, 6)}-{RNG.randint(1, 30)}.log",
        "cert": lambda: "-----BEGIN CERTIFICATE-----\n" + b64(48) + "\n-----END CERTIFICATE-----",
        "public-key": lambda: "-----BEGIN PUBLIC KEY-----\n" + b64(48) + "\n-----END PUBLIC KEY-----",
        "chinese": lambda: RNG.choice([
            "密码错误时请联系管理员重置。", "令牌过期后需要重新登录", "密钥轮换周期是 90 天",
            "部署前先跑 make test，提交信息用中文", f"接口超时设为 {RNG.randint(1, 30)} 秒"]),
        "prefix-prose": lambda: RNG.choice([
            "The AKIA prefix marks AWS access keys; ghp_ marks GitHub tokens.",
            "Stripe keys start with sk_live_ in production", "HF tokens look like hf_ followed by letters",
            "npm tokens start with npm_, PyPI tokens with pypi-"]),
        "code": lambda: RNG.choice([
            "def login(user: str, password: str) -> Session:", "if password == confirmation:",
            "token = request.headers.get('Authorization')", "self.secret = secret",
            "hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())", "password: Optional[str] = None"]),
        "ticket": lambda: f"JIRA SHOP-{RNG.randint(100, 9999)}: migrate the cron to Celery beat",
        "long-id": lambda: f"trace id {rand(HEX, 32)} in Tempo",
        "etag": lambda: f'ETag: W/"{rand(HEX, 16)}-{rand(HEX, 8)}"',
        "s3-key": lambda: f"s3://shop-exports/{RNG.randint(2020, 2026)}/{rand(LOWER + DIGITS, 12)}.parquet",
        "semver-range": lambda: f'"react": "^18.{RNG.randint(0, 3)}.{RNG.randint(0, 9)}"',
        "gpg": lambda: f"signed with key {rand(HEX.upper(), 16)}",
        "account-id": lambda: f"AWS account {rand(DIGITS, 12)}, region eu-west-{RNG.randint(1, 3)}",
        "cron": lambda: f"schedule: '{RNG.randint(0, 59)} {RNG.randint(0, 23)} * * 1-5'",
        "oauth-prose": lambda: RNG.choice([
            "grant_type=client_credentials&scope=read", "token_type: bearer", "expires_in: 3600",
            "the bearer token goes in the Authorization header", "use --token to pass a token explicitly",
            "refresh tokens last 30 days, access tokens 1 hour"]),
    }
    out: list[dict[str, str]] = []
    names = list(families)
    count = 0
    while count < 400:
        name = names[count % len(names)]
        out.append({"kind": name, "text": families[name]()})
        count += 1
    seen: set[str] = set()
    unique = []
    for item in out:
        if item["text"] not in seen:
            seen.add(item["text"])
            unique.append(item)
    return unique


def found_later() -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Cases added after the corpus above was written, from leaks users found: drawn after it from the same seeded
    generator, so that the records above stay as they were."""
    def aws_id() -> str:
        return RNG.choice(["AKIA", "ASIA"]) + rand(UPPER + "234567", 16)

    formats: dict[str, tuple[Callable[[], str], list[str]]] = {
        # An AWS secret key beside its key id, with no key name.
        "aws-secret-key-beside-id": (lambda: rand(ALNUM + "+/", 40), [
            "AWS creds: {id} secret {s}", "{id} / {s}", "User name,Access key ID,Secret access key\nci,{id},{s}",
            "key id {id}\nsecret {s}", "secret {s} goes with {id}"]),
        # A keyword whose value is another keyword and then the secret.
        "password-after-keyword-chain": (password, [
            "password: password: {s}", "Password: token: {s}", "The password: secret: {s}",
            "数据库密码：password: {s} 请勿外传", "api_key: DB_PASSWORD: {s}"]),
    }
    pos: list[dict[str, str]] = []
    for kind, (make, contexts) in formats.items():
        for context in RNG.sample(contexts, PER_KIND):
            secret = make()
            pos.append({"kind": kind, "text": context.replace("{id}", aws_id()).replace("{s}", secret),
                        "secret": secret})
    families: dict[str, Callable[[], str]] = {
        # "Asia" holds an ASIA key id's prefix; a 40-character base64 run or a commit SHA without an id stays.
        "asia-base64": lambda: RNG.choice([
            f"moved the bucket to Asia Pacific (Sydney) in {sha1()}", f"ASIA-PACIFIC rollout fixture: {b64(30)}",
            f"Asia region cache key {b64(30)}"]),
        "keyword-chain-prose": lambda: RNG.choice([
            "password: token: required", "secret: api_key: see the vault", "Password: password: see the vault",
            "token: secret: optional (defaults to the env var)", "密码：password: 请联系管理员"]),
    }
    neg = [{"kind": name, "text": make()} for name, make in families.items() for _ in range(5)]
    return pos, list({item["text"]: item for item in neg}.values())


def main() -> None:
    pos, neg = positives(), negatives()
    later_pos, later_neg = found_later()
    pos, neg = pos + later_pos, neg + later_neg
    for name, items in (("positives.jsonl", pos), ("negatives.jsonl", neg)):
        with (HERE / name).open("w", encoding="utf-8") as fh:
            for item in items:
                fh.write(json.dumps(item, ensure_ascii=False) + "\n")
    print(f"{len(pos)} positives of {len({p['kind'] for p in pos})} kinds, {len(neg)} negatives")


if __name__ == "__main__":
    main()
