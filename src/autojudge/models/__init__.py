"""Model pairs and what makes them: loading and checking pairs, prompts, GGUF conversion, teacher-forced
predictions, draft distillation, LoRA fine-tuning of targets, and the pair/engine/task a params file names
(``models.runtime``).

Imports engines, tasks, params and lower layers.
"""
