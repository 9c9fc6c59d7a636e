"""Processes user data with the real cloud-init (the installed `cloudinit` module) as a node would.

Usage: cloud-init-userdata.py USER_DATA FEATURE_ERROR_ON_FAILURE(true|false) [FROM_PATH TO_PATH]

Prints JSON: the parts cloud-init would hand to its part handlers ({type, filename, payload}),
whether each type has a default handler, or {"error": ...} when cloud-init refuses the data.
FROM_PATH/TO_PATH move an include of file://FROM_PATH to file://TO_PATH, so a test can point it
at a temp file instead of /etc.
"""
import json
import sys
import tempfile

from cloudinit import features, helpers, user_data
from cloudinit.handlers.boot_hook import BootHookPartHandler
from cloudinit.handlers.cloud_config import CloudConfigPartHandler
from cloudinit.handlers.jinja_template import JinjaTemplatePartHandler
from cloudinit.handlers.shell_script import ShellScriptPartHandler
from cloudinit.handlers.shell_script_by_frequency import ShellScriptByFreqPartHandler
from cloudinit.settings import PER_ALWAYS


def main():
    blob = open(sys.argv[1], "rb").read()
    features.ERROR_ON_USER_DATA_FAILURE = sys.argv[2] == "true"
    if len(sys.argv) == 5:
        blob = blob.replace(
            b"file://" + sys.argv[3].encode(), b"file://" + sys.argv[4].encode()
        )
    with tempfile.TemporaryDirectory() as tmp:
        paths = helpers.Paths({"cloud_dir": tmp, "run_dir": tmp})
        # The handlers stages.Init._default_handlers registers for user data.
        opts = {"paths": paths, "datasource": None}
        cc = CloudConfigPartHandler(**opts)
        sh = ShellScriptPartHandler(**opts)
        known = set()
        for h in [cc, sh, ShellScriptByFreqPartHandler(PER_ALWAYS, **opts),
                  BootHookPartHandler(**opts),
                  JinjaTemplatePartHandler(**opts, sub_handlers=[cc, sh])]:
            known.update(h.list_types())
        try:
            msg = user_data.UserDataProcessor(paths).process(blob)
        except Exception as e:  # cloud-init refuses the user data
            print(json.dumps({"error": str(e)}))
            return
        parts = []
        for part in msg.walk():
            if part.get_content_maintype() == "multipart":
                continue
            parts.append({
                "type": part.get_content_type(),
                "handled": part.get_content_type() in known,
                "filename": part.get_filename(),
                "payload": part.get_payload(decode=True).decode("utf-8"),
            })
        print(json.dumps({"parts": parts}))


main()
