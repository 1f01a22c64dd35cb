"""Secrets that only their neighbours give away: an AWS secret access key written beside its key id with no key
name, and a keyword whose value is another keyword ("password: token: ...").  Both were committed verbatim.

No fake secret below is written out as a literal (see ``test_redact.py``).
"""

from __future__ import annotations

import time

import pytest

from gitmem.redact.engine import Redaction, contains_secret, find_secrets, redact

AWS_ID = "AKIA" + "IOSFODNN7" + "EXAMPLE"
AWS_SESSION_ID = "ASIA" + "QRSTUVWXYZ" + "234567"
AWS_SECRET = "wJalrXUtnFEMI/" + "K7MDENG/bPxRfiCY" + "EXAMPLEKEY"
COMMIT_SHA = "3f9a1c2d4e5b6a7c" + "8d9e0f1a2b3c4d5e6f7a8b9c"
BASE64_RUN = "tXdX5sjds4txhxND" + "QShp1umoKDWknRxHJMD9rvke"  # 40 characters, both cases, no key id near it
VALUE = "Xy12" + "!abc"
CJK_VALUE = "超级秘密" + "123"


# --- an AWS secret key beside its key id --------------------------------------------------------------

PAIRED = [
    f"AWS creds: {AWS_ID} secret {AWS_SECRET}",
    f"{AWS_ID} / {AWS_SECRET}",
    f"{AWS_ID}:{AWS_SECRET}",
    f"key id {AWS_ID}\nsecret {AWS_SECRET}",
    f"User name,Access key ID,Secret access key\nci,{AWS_ID},{AWS_SECRET},https://console.example.com",
    f"session {AWS_SESSION_ID}, secret {AWS_SECRET}, expires at noon",
    f"({AWS_ID}) and its secret key, in the vault: {AWS_SECRET}.",
]


@pytest.mark.parametrize("text", PAIRED)
def test_an_aws_secret_key_beside_its_key_id_is_redacted(text: str) -> None:
    result = redact(text)
    assert AWS_SECRET not in result.text
    assert AWS_ID not in result.text and AWS_SESSION_ID not in result.text
    assert result.kinds == ("aws-access-key", "aws-secret-key")
    # Only the two keys are replaced: the words between them stay.
    assert result.text == (
        text.replace(AWS_ID, "[REDACTED:aws-access-key]").replace(AWS_SESSION_ID, "[REDACTED:aws-access-key]")
        .replace(AWS_SECRET, "[REDACTED:aws-secret-key]")
    )
    assert contains_secret(text)
    assert redact(result.text) == Redaction(result.text, ())


def test_an_aws_secret_key_before_its_key_id_is_redacted() -> None:
    result = redact(f"secret {AWS_SECRET} goes with {AWS_ID}")
    assert result == Redaction("secret [REDACTED:aws-secret-key] goes with [REDACTED:aws-access-key]",
                               ("aws-secret-key", "aws-access-key"))


def test_a_secret_left_beside_an_earlier_marker_is_found() -> None:
    # What the previous version committed for "AWS creds: AKIA... secret wJal...": gitmem doctor must find it.
    leaked = f"AWS creds: [REDACTED:aws-access-key] secret {AWS_SECRET}"
    assert find_secrets(leaked) == [("aws-secret-key", AWS_SECRET)]
    assert redact(leaked).text == "AWS creds: [REDACTED:aws-access-key] secret [REDACTED:aws-secret-key]"
    assert redact(f"{AWS_SECRET} [REDACTED:aws-access-key]").kinds == ("aws-secret-key",)


@pytest.mark.parametrize(
    "text",
    [
        f"fixed in {COMMIT_SHA} (cherry-picked to release/2.3)",
        f"commit {COMMIT_SHA} and the fixture {BASE64_RUN}",
        f"moved the bucket to Asia Pacific (Sydney) in {COMMIT_SHA}",
        f"Asia region cache key {BASE64_RUN}",
        f"ASIA-PACIFIC rollout fixture: {BASE64_RUN}",
    ],
)
def test_a_40_character_run_without_a_key_id_is_kept(text: str) -> None:
    assert redact(text) == Redaction(text, ())
    assert not contains_secret(text)


@pytest.mark.parametrize(
    "text",
    [
        f"{AWS_ID} fixed in {COMMIT_SHA}",  # a commit SHA is all hex
        f"{AWS_ID} fixed in {COMMIT_SHA.upper()}",
        f"{AWS_ID} at {'/home/ada/projects/shop/config/aws/cred1'}",  # one case of letters: a path, not a key
        f"{AWS_ID} {'x' * 70} {AWS_SECRET}",  # too far on the same line
        f"{AWS_ID}\nthen\n{AWS_SECRET}",  # two lines down
        f"{AWS_ID} {AWS_SECRET}x",  # 41 characters
        f"{AWS_ID} x{AWS_SECRET}",
    ],
)
def test_only_the_key_id_is_redacted_when_no_secret_key_is_beside_it(text: str) -> None:
    result = redact(text)
    assert result == Redaction(text.replace(AWS_ID, "[REDACTED:aws-access-key]"), ("aws-access-key",))


# --- a keyword whose value is another keyword -------------------------------------------------------------

CHAINS = [
    (f"password: password: {VALUE}", VALUE),
    (f"Password: password: {VALUE}", VALUE),
    (f"password: token: {VALUE}", VALUE),
    (f"The password: secret: {VALUE}", VALUE),
    (f"数据库密码：password: {CJK_VALUE} 请勿外传", CJK_VALUE),
    (f"password = password = {VALUE}", VALUE),
    (f"password: DB_PASSWORD: {VALUE}", VALUE),
    (f"password: token: api_key: {VALUE}", VALUE),
    (f"token: password={VALUE}", VALUE),
    (f"secret: 令牌： {VALUE}", VALUE),
]


@pytest.mark.parametrize(("text", "value"), CHAINS)
def test_the_value_after_the_last_keyword_of_a_chain_is_redacted(text: str, value: str) -> None:
    result = redact(text)
    assert value not in result.text
    # The keywords stay; only the value is replaced.
    assert result == Redaction(text.replace(value, "[REDACTED:password]"), ("password",))
    assert contains_secret(text)
    assert redact(result.text) == Redaction(result.text, ())


def test_a_passphrase_at_the_end_of_a_chain_is_the_rest_of_the_line() -> None:
    assert redact("password: passphrase: correct horse battery staple").text == (
        "password: passphrase: [REDACTED:password]"
    )


def test_a_value_that_only_looks_like_a_key_is_still_one_value() -> None:
    # Without a space after its colon, "pw:ab1" is a value, redacted whole as before.
    assert redact("password: pw:" + "ab1").text == "password: [REDACTED:password]"


@pytest.mark.parametrize(
    "text",
    [
        "the password field is required",
        "password: see the vault",
        "Password: password: see the vault",
        "password: token: required",
        "secret: api_key: see the vault",
        "token: secret: optional (defaults to the env var)",
        "密码：password: 请联系管理员",
        "password = token = get_token()",
        "password: token: ${DB_TOKEN}",
    ],
)
def test_a_chain_of_keywords_without_a_secret_is_kept(text: str) -> None:
    assert redact(text) == Redaction(text, ())
    assert not contains_secret(text)


# --- cost ---------------------------------------------------------------------------------------------

MEGABYTE = 1_000_000


def fill(pattern: str, length: int) -> str:
    """``pattern`` repeated and cut to ``length`` characters."""
    return (pattern * (length // len(pattern) + 1))[:length]


@pytest.mark.parametrize(
    "text",
    [
        fill("password: ", MEGABYTE) + VALUE,
        fill("password:", MEGABYTE) + VALUE,
        fill("token=password=", MEGABYTE),
        fill(f"{AWS_ID} {'a' * 40} ", MEGABYTE),
        fill(f"{AWS_ID}\n{'b' * 60}\n", MEGABYTE),
        fill(f"Asia {BASE64_RUN} ", MEGABYTE),
    ],
    ids=["chained keys", "chained keys without spaces", "chained assignments", "key ids beside lower-case runs",
         "key ids beside long lines", "Asia beside base64 runs"],
)
def test_the_new_patterns_take_linear_time(text: str) -> None:
    start = time.perf_counter()
    result = redact(text)
    elapsed = time.perf_counter() - start
    # ~0.2-1 s on the development machine; backtracking over the chain or the gap would take minutes.
    assert elapsed < 20, f"{elapsed:.2f} s"
    assert redact(result.text).text == result.text
