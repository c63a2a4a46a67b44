# Dataflow Flex Template launcher image for `zitadel-beam migrate` (docs/flex-template.md).
# At the repository root so that `gcloud builds submit --tag IMAGE .` builds it with the whole
# project as its context. Not built by the test suite (no container engine on the CI machine).
FROM gcr.io/dataflow-templates-base/python311-template-launcher-base

WORKDIR /template
COPY setup.py /template/setup.py
COPY pipeline /template/pipeline
COPY transforms /template/transforms
COPY flex_template /template/flex_template

# The launcher runs this file with the template's parameters (pipeline/flex_entry.py maps them to
# the CLI's flags); workers install the same packages from this setup.py (Beam's --setup_file).
ENV FLEX_TEMPLATE_PYTHON_PY_FILE="/template/flex_template/launch.py"
ENV FLEX_TEMPLATE_PYTHON_SETUP_FILE="/template/setup.py"

# Editable: the entry point reads /template/flex_template/metadata.json beside the packages.
RUN pip install --no-cache-dir --upgrade pip \
    && pip install --no-cache-dir -e "/template[dataflow]"
