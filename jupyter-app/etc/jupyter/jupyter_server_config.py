"""The Jupyter server settings of the settlement app (``make lab`` and Binder).

``make lab`` and ``binder/start`` put this directory on ``JUPYTER_CONFIG_PATH``, so these
settings apply to the server that serves JupyterLab and, through Voila's server extension,
the dashboard at ``/voila/render/dashboard.ipynb``. They are the project's deployment
settings, not the package's: ``pip install settlement-widgets`` elsewhere changes nothing.
"""

c = get_config()  # noqa: F821 (injected by traitlets)

# Idle kernels are culled. Each Voila page starts its own kernel (120-170 MB with its
# sandbox); the page asks the server to shut it down when it is closed, but that request
# is lost when the browser crashes, the network drops or a phone kills the tab. A kernel
# with no client connected and no activity for 10 minutes is shut down; an open page (or an
# open notebook in JupyterLab) keeps its kernel, however idle (cull_connected=False), and a
# cell still running is never interrupted (cull_busy=False).
c.MappingKernelManager.cull_idle_timeout = 600
c.MappingKernelManager.cull_interval = 60
c.MappingKernelManager.cull_connected = False
c.MappingKernelManager.cull_busy = False

# Cells tagged "remove-cell" (the dashboard's developer notes) are left out of the Voila app.
# Voila renders with the server's config in extension mode, so the setting lives here; it
# also applies to JupyterLab's "Export as HTML", where the tag means the same.
c.TagRemovePreprocessor.remove_cell_tags = ["remove-cell"]

# No MathJax from the internet: Voila's extension mode otherwise points the page at a public
# CDN (its standalone mode does not). With neither set, the Voila page uses the MathJax that
# is bundled with it and served by this server.
c.ServerApp.tornado_settings = {"mathjax_url": None, "mathjax_config": None}
