"""MLflow accounts of team mode, made through the basic-auth app's REST API as its admin.

- ``admin``: created by MLflow itself on the auth app's first start (``MLFLOW_AUTH_ADMIN_PASSWORD``);
- ``evaluator``: EDIT on every experiment (``resource_id='*'``): creates experiments and runs, logs;
- ``viewer``: READ on every experiment; any write is refused with 403.

The server's ``default_permission`` is READ as well, so an account made later reads but never
writes unless granted.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from omnieval.errors import OmnievalError

ROLES: dict[str, str] = {"evaluator": "EDIT", "viewer": "READ"}
"""Account name -> its permission on every experiment."""


class _Api:
    def __init__(self, base_url: str, username: str, password: str) -> None:
        self.base = base_url.rstrip("/")
        token = base64.b64encode(f"{username}:{password}".encode()).decode("ascii")
        self.headers = {"Authorization": f"Basic {token}", "Content-Type": "application/json"}

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        url = f"{self.base}{path}"
        data = None
        if method == "GET" and body:
            url += "?" + urllib.parse.urlencode(body)
        elif body is not None:
            data = json.dumps(body).encode("utf-8")
        request = urllib.request.Request(url, data=data, method=method, headers=self.headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read().decode("utf-8", errors="replace")
                return int(response.status), json.loads(text) if text.strip() else {}
        except urllib.error.HTTPError as exc:
            text = exc.read().decode("utf-8", errors="replace")
            try:
                return exc.code, json.loads(text)
            except ValueError:
                return exc.code, {"message": text[:300]}


def ensure_accounts(base_url: str, admin: tuple[str, str], accounts: dict[str, str]) -> list[str]:
    """Create each missing account of ``accounts`` (name -> password) with its :data:`ROLES` grant.

    Returns the accounts created. An account that exists keeps its password and gets its grant if
    missing.

    Raises:
        OmnievalError: the admin's credentials are refused or the server answers an error.
    """
    api = _Api(base_url, *admin)
    created = []
    for name, password in accounts.items():
        status, body = api.call("GET", "/api/2.0/mlflow/users/get", {"username": name})
        if status in (401, 403):
            raise OmnievalError(
                f"the MLflow server at {base_url} refused the admin account '{admin[0]}' ({status}): "
                "is this team folder's credentials file the one the server started with?"
            )
        if status != 200:
            status, body = api.call(
                "POST", "/api/2.0/mlflow/users/create", {"username": name, "password": password}
            )
            if status != 200:
                raise OmnievalError(
                    f"creating MLflow account '{name}' failed ({status}): {body.get('message', '')}"
                )
            created.append(name)
        grant = {
            "username": name,
            "resource_type": "experiment",
            "resource_id": "*",
            "permission": ROLES[name],
        }
        status, body = api.call("POST", "/api/3.0/mlflow/users/permissions/grant", grant)
        if status != 200 and body.get("error_code") != "RESOURCE_ALREADY_EXISTS":
            raise OmnievalError(
                f"granting {ROLES[name]} on every experiment to '{name}' failed ({status}): {body.get('message', '')}"
            )
    return created
