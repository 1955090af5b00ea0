# GR_PYTHON_DIR: where the Python package gnuradio.mimodet is installed, relative to
# CMAKE_INSTALL_PREFIX.
#
# GNU Radio 3.10's GrPython picks a site directory only when exactly one of
# site.getsitepackages() lies under the prefix. With the prefix /usr on Debian three do
# (/usr/local/... starts with /usr too), and it falls back to lib/python3.X/site-packages,
# which Debian's Python does not search. Debian's own place for packages of /usr is
# lib/python3/dist-packages (GNU Radio's gnuradio package is there): use it when the
# interpreter searches it. Other prefixes keep GrPython's choice (GnuradioConfig has
# already included GrPython, so GR_PYTHON_DIR is set by now). -DGR_PYTHON_DIR=...
# overrides both.
#
# Copyright 2026 gr-mimodet developers.
# SPDX-License-Identifier: GPL-3.0-or-later

if(NOT DEFINED CACHE{GR_PYTHON_DIR})
  execute_process(
    COMMAND ${PYTHON_EXECUTABLE} -c "import os, sys
prefix = os.path.realpath(sys.argv[1])
d = os.path.join(prefix, 'lib', 'python3', 'dist-packages')
print('lib/python3/dist-packages' if d in map(os.path.realpath, sys.path) else '')"
            ${CMAKE_INSTALL_PREFIX}
    OUTPUT_VARIABLE _mimodet_debian_python_dir
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_mimodet_debian_python_dir)
    set(GR_PYTHON_DIR ${_mimodet_debian_python_dir})
  endif()
endif()
