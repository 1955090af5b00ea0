# CPack: `cpack -G DEB` in a build tree makes a Debian package of what `cmake --install`
# installs. Configure with -DCMAKE_INSTALL_PREFIX=/usr (scripts/package does) so that the
# library, the Python package and the GRC blocks land where Debian's linker, Python and
# GNU Radio look (lib/x86_64-linux-gnu, lib/python3/dist-packages,
# share/gnuradio/grc/blocks).
#
# Copyright 2026 gr-mimodet developers.
# SPDX-License-Identifier: GPL-3.0-or-later

set(CPACK_PACKAGE_NAME ${PROJECT_NAME})
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "gr-mimodet developers")
if(NOT CPACK_PACKAGE_CONTACT)
  set(CPACK_PACKAGE_CONTACT "gr-mimodet developers")
endif()
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "GNU Radio module for MIMO-OFDM detection (ML, sphere, trellis, linear; CPU and CUDA)")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_RESOURCE_FILE_README ${PROJECT_SOURCE_DIR}/README.md)
# The paths in the package are the configured ones (see above).
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_PACKAGE_FILE_NAME "${PROJECT_NAME}_${PROJECT_VERSION}")
set(CPACK_SOURCE_IGNORE_FILES "/build.*/" "/bundle.*/" "/\\\\.git/" "__pycache__")

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION hamradio)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# shlibs file and the ldconfig trigger for libgnuradio-mimodet.so.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)

# The library is linked against one GNU Radio release (the SONAME of
# libgnuradio-runtime.so is 3.10.x); the Python extension against one Python 3.x.
set(_mimodet_gr "${Gnuradio_VERSION_MAJOR}.${Gnuradio_VERSION_MINOR}.${Gnuradio_VERSION_PATCH}")
math(EXPR _mimodet_gr_next "${Gnuradio_VERSION_PATCH} + 1")
set(_mimodet_depends
    "gnuradio (>= ${_mimodet_gr})"
    "gnuradio (<< ${Gnuradio_VERSION_MAJOR}.${Gnuradio_VERSION_MINOR}.${_mimodet_gr_next})"
    # The installed CMake config finds Eigen: the library's link interface names it.
    "libeigen3-dev (>= 3.3)")
if(ENABLE_PYTHON)
  execute_process(COMMAND ${PYTHON_EXECUTABLE} -c
                          "import sys; print('%d.%d %d.%d' % (sys.version_info[:2] + (sys.version_info[0], sys.version_info[1] + 1)))"
                  OUTPUT_VARIABLE _mimodet_py OUTPUT_STRIP_TRAILING_WHITESPACE)
  separate_arguments(_mimodet_py)
  list(GET _mimodet_py 0 _mimodet_py_this)
  list(GET _mimodet_py 1 _mimodet_py_next)
  list(APPEND _mimodet_depends "python3 (>= ${_mimodet_py_this})"
       "python3 (<< ${_mimodet_py_next})" "python3-numpy")
endif()
string(REPLACE ";" ", " CPACK_DEBIAN_PACKAGE_DEPENDS "${_mimodet_depends}")
# gnuradio-dev: GNU Radio's CMake config, which find_package(gnuradio-mimodet) needs;
# matplotlib: the BER-curve examples and GRC's GUI sinks.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "gnuradio-dev, python3-matplotlib")

string(CONCAT CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "MIMO-OFDM detection for GNU Radio 3.10: exact ML and near-ML detectors (parallel\n"
    "sphere detector, fixed-complexity and soft-output sphere decoders, multi-pass trellis\n"
    "traversal, ZF, MMSE) for 2 to 8 antennas and QPSK/16QAM/64QAM, on the CPU and on\n"
    "NVIDIA GPUs, and the blocks of an LTE-style MIMO-OFDM link (framer, channel\n"
    "simulator, synchronisation, OFDM demodulator, channel estimator, detector).\n"
    "Contains the library and headers with a CMake package config, the Python module\n"
    "gnuradio.mimodet, the GRC blocks (category MIMO Detection) and the examples.")
if(ENABLE_CUDA)
  string(APPEND CPACK_DEBIAN_PACKAGE_DESCRIPTION
         "\nBuilt with the CUDA backend: libcufft from NVIDIA's CUDA toolkit must be on the\n"
         "library path (the GPU is optional at run time).")
endif()

include(CPack)
