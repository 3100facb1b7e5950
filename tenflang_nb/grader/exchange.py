"""nbgrader's folder exchange with submissions that only the teacher can read, for a class
where every student is a system user of their own (a JupyterHub with LocalProcessSpawner,
The Littlest JupyterHub).

nbgrader's own ``submit`` leaves each submission folder ``0777`` and its files readable by
everyone, hidden only by a name no classmate can list (``inbound/`` is ``0733``). Here the
folder is ``0750`` and its files ``0440``: ``inbound/`` is set-group-id, so they belong to the
teacher's group, whoever submitted them. Feedback stays nbgrader's: ``feedback/`` is ``0711``
and each file is named by a hash of the student's own (now private) submission secret.

Every server's ``nbgrader_config.py`` (``/etc/jupyter/`` in an image)::

    c.ExchangeFactory.submit = "tenflang_nb.grader.exchange.PrivateSubmit"
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile

from nbgrader.exchange.default.submit import ExchangeSubmit

__all__ = ["DIRECTORY", "FILE", "PrivateSubmit"]

DIRECTORY = 0o750  # the submitter and the teacher's group may enter; classmates may not
FILE = 0o640  # the teacher's copies (collect) stay writable by the teacher


class PrivateSubmit(ExchangeSubmit):
    """``nbgrader submit``, its copy in the exchange readable by the teacher's group only."""

    def copy_files(self) -> None:
        super().copy_files()
        dest = os.path.join(self.inbound_path, self.assignment_filename)
        # the folder first: from then on no classmate can enter it
        os.chmod(dest, DIRECTORY)
        group = os.stat(self.inbound_path).st_gid
        for folder, dirs, files in os.walk(dest):
            for name in dirs:
                os.chmod(os.path.join(folder, name), DIRECTORY)
            for name in files:
                path = os.path.join(folder, name)
                if os.stat(path).st_gid != group:
                    self._regroup(path)
                os.chmod(path, FILE)
        if not os.stat(self.inbound_path).st_mode & stat.S_ISGID:
            self.log.warning("%s is not set-group-id: the teacher may not read %s",
                             self.inbound_path, dest)

    def _regroup(self, path: str) -> None:
        """Give ``path`` the teacher's group. nbgrader's copy leaves the submission folder
        without set-group-id (a student is no member of the teacher's group), so the files it
        writes after the copy (timestamp, secret) are the student's group: a file made in
        ``inbound/`` (set-group-id) gets the teacher's, and a rename keeps it."""
        fd, temporary = tempfile.mkstemp(prefix=".submitting-", dir=self.inbound_path)
        try:
            with open(path, "rb") as source, os.fdopen(fd, "wb") as copy:
                shutil.copyfileobj(source, copy)
            os.chmod(temporary, FILE)
            os.replace(temporary, path)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise
