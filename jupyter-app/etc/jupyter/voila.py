"""The Voila settings of the settlement app.

Voila reads ``voila.py`` from every ``JUPYTER_CONFIG_PATH`` directory both as JupyterLab's
server extension (``make lab``, Binder: ``/voila/render/dashboard.ipynb``) and as the
standalone ``voila`` command.
"""

c = get_config()  # noqa: F821 (injected by traitlets)

# An app, not a notebook: no code, no tracebacks, and the "settlement" template, which is
# Voila's "lab" template without its links to a public CDN, so the page loads nothing from
# outside the server. The template is in ../../share/jupyter/nbconvert/templates (on
# JUPYTER_PATH), a place Voila searches for templates: a share/jupyter/voila directory of our
# own would instead become Voila's data directory and hide the one Voila installs.
c.VoilaConfiguration.template = "settlement"
c.VoilaConfiguration.strip_sources = True
c.VoilaConfiguration.show_tracebacks = False

# The standalone ``voila`` command runs its own kernel manager and renders with this config,
# not the server's: take the kernel culling and the cell tags from the server settings.
# (In extension mode the server already has them; this adds nothing there.)
load_subconfig("jupyter_server_config.py")  # noqa: F821 (injected by traitlets)
